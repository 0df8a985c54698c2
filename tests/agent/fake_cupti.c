/* A stand-in for libcupti (and, built with -DFAKE_CUDA, libcuda) for CPU-only tests.
 *
 * It implements the entry points gtop's agent calls, with CUPTI's calling conventions
 * and record layouts (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6: the sizes of
 * libcupti 13.0). fake_launch() plays the role of the GPU: it writes one kernel record per
 * launch (and a memcpy record every tenth) into buffers obtained through the registered
 * buffer-requested callback, drops and counts records when no buffer is given, and hands
 * full buffers back through the buffer-completed callback, as CUPTI does.
 * fake_range_push()/fake_range_pop() play NVTX: they write CUpti_ActivityMarker2 start and
 * end records, only once NVTX has loaded this library as its injection
 * (InitializeInjectionNvtx2, what NVTX calls in the library NVTX_INJECTION64_PATH names)
 * and only while the marker kind is enabled, as CUPTI does.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FAKE_CUDA
static int initialised;
int cuInit(unsigned flags) { (void)flags; initialised = 1; return 0; }
int cuDeviceGetCount(int *n) { if (!initialised) return 3; *n = 1; return 0; }
#else
typedef void (*req_fn)(uint8_t **, size_t *, size_t *);
typedef void (*comp_fn)(void *, uint32_t, uint8_t *, size_t, size_t);

#define KERNEL_SIZE 216
#define MEMCPY_SIZE 96
#define MARKER_SIZE 56
#define CLOCK_OFFSET 1000000000ull

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static req_fn requested;
static comp_fn completed;
static uint8_t *buf;
static size_t buf_size, buf_used;
static uint64_t dropped, enabled_mask;
static uint32_t correlation;

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + CLOCK_OFFSET;
}

int cuptiGetResultString(int code, const char **s) { (void)code; *s = "fake error"; return 0; }
int cuptiGetVersion(uint32_t *v) { *v = 130001; return 0; }
int cuptiGetTimestamp(uint64_t *t) { *t = now(); return 0; }
int cuptiActivityRegisterCallbacks(req_fn r, comp_fn c) { requested = r; completed = c; return 0; }
int cuptiActivityEnable(int kind) {
  if (kind == 12 && getenv("FAKE_CUPTI_NO_MARKER")) return 1; /* CUPTI_ERROR_INVALID_PARAMETER */
  enabled_mask |= 1ull << kind;
  return 0;
}
int cuptiActivityDisable(int kind) { enabled_mask &= ~(1ull << kind); return 0; }
int cuptiActivitySetAttribute(int a, size_t *s, void *v) { (void)a; (void)s; (void)v; return 0; }
int cuptiSetThreadIdType(int t) { (void)t; return 0; }
int cuptiActivityEnableLatencyTimestamps(uint8_t e) { (void)e; return 0; }
static long finalized_by; /* thread id of the last cuptiFinalize; 0: none */
int cuptiFinalize(void) { finalized_by = gettid(); return 0; }
/* Thread id (gettid) that last called cuptiFinalize; 0 if none did (gtop never should). */
long fake_finalized_by(void) { return finalized_by; }
int cuptiUnsubscribe(void *h) { (void)h; return 0; }
int cuptiSubscribe(void **h, void *cb, void *ud) {
  (void)cb; (void)ud;
  if (getenv("FAKE_CUPTI_BUSY")) return 39;
  *h = (void *)1;
  return 0;
}
int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *n) {
  (void)ctx; (void)stream;
  *n = dropped;
  dropped = 0;
  return 0;
}

static void complete_locked(void) {
  if (buf) completed(NULL, 0, buf, buf_size, buf_used);
  buf = NULL;
  buf_used = 0;
}

/* A forced flush on a busy GPU: the last FAKE_CUPTI_QUEUE kernels of the current buffer
   are still queued on the GPU, not started, and come back without times (as CUPTI's do:
   an H200 job's ~1,000 queued kernels after a compile). */
static void end_queued_locked(void) {
  const char *q = getenv("FAKE_CUPTI_QUEUE");
  size_t offsets[4096], n = 0, off = 0;
  long queued = q ? atol(q) : 0;
  while (off + 4 <= buf_used && n < 4096) {
    uint32_t kind;
    memcpy(&kind, buf + off, 4);
    if (kind == 10) offsets[n++] = off;
    off += kind == 10 ? KERNEL_SIZE : kind == 1 ? MEMCPY_SIZE : MARKER_SIZE;
  }
  while (queued-- > 0 && n > 0) memset(buf + offsets[--n] + 16, 0, 16); /* start, end */
}

int cuptiActivityFlushAll(uint32_t flag) {
  /* FAKE_CUPTI_BUSY_GPU: like a GPU that is never idle, a plain flush finds the
     current buffer with records in flight and returns nothing; only a forced one does */
  if (!(flag & 1) && getenv("FAKE_CUPTI_BUSY_GPU")) return 0;
  pthread_mutex_lock(&lock);
  if (buf && buf_used && getenv("FAKE_CUPTI_BUSY_GPU")) end_queued_locked();
  if (buf && buf_used) complete_locked();
  pthread_mutex_unlock(&lock);
  return 0;
}

static uint8_t *reserve(size_t size) {
  if (buf && buf_used + size > buf_size) complete_locked();
  if (!buf) {
    size_t max_records = 0;
    requested(&buf, &buf_size, &max_records);
    buf_used = 0;
    if (!buf || buf_size < size) { buf = NULL; dropped++; return NULL; }
  }
  uint8_t *rec = buf + buf_used;
  buf_used += size;
  return rec;
}

#define PUT(rec, off, type, value) do { type v_ = (value); memcpy((rec) + (off), &v_, sizeof v_); } while (0)

/* Which activity kinds are enabled (bit per CUpti_ActivityKind), for tests. */
uint64_t fake_enabled_mask(void) { return enabled_mask; }

/* Launch n fake kernels named name (1 us each, back to back). */
void fake_launch(int n, const char *name) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n; i++) {
    uint64_t t = now();
    uint8_t *k = (enabled_mask >> 10) & 1 ? reserve(KERNEL_SIZE) : NULL;
    if (k) {
      PUT(k, 0, uint32_t, 10);
      PUT(k, 6, uint16_t, 32);                 /* registers */
      PUT(k, 16, uint64_t, t);                 /* start */
      PUT(k, 24, uint64_t, t + 1000);          /* end */
      PUT(k, 44, uint32_t, 1);                 /* context */
      PUT(k, 48, uint32_t, 7);                 /* stream */
      PUT(k, 52, int32_t, 1); PUT(k, 56, int32_t, 2); PUT(k, 60, int32_t, 3);
      PUT(k, 64, int32_t, 128); PUT(k, 68, int32_t, 1); PUT(k, 72, int32_t, 1);
      PUT(k, 80, int32_t, 256);                /* dynamic shared memory */
      PUT(k, 92, uint32_t, ++correlation);
      PUT(k, 104, const char *, name);
    }
    if (i % 10 == 9 && ((enabled_mask >> 1) & 1)) {
      uint8_t *m = reserve(MEMCPY_SIZE);
      if (m) {
        PUT(m, 0, uint32_t, 1);
        PUT(m, 4, uint8_t, 1);                 /* HtoD */
        PUT(m, 8, uint64_t, 4096);
        PUT(m, 16, uint64_t, t);
        PUT(m, 24, uint64_t, t + 500);
        PUT(m, 40, uint32_t, 7);
        PUT(m, 44, uint32_t, ++correlation);
      }
    }
  }
  pthread_mutex_unlock(&lock);
}

static int nvtx_injected;
static uint32_t marker_ids[64];
static int marker_depth;
static uint32_t marker_next;

/* What NVTX calls in its injection library at the process's first NVTX call. */
int InitializeInjectionNvtx2(void *get_export_table) { (void)get_export_table; nvtx_injected = 1; return 1; }

static void marker(int flags, uint32_t id, const char *name) {
  uint8_t *m = reserve(MARKER_SIZE);
  if (!m) return;
  memset(m, 0, MARKER_SIZE);
  PUT(m, 0, uint32_t, 12);
  PUT(m, 4, int32_t, flags);               /* 2 start, 4 end */
  PUT(m, 8, uint64_t, now());
  PUT(m, 16, uint32_t, id);
  PUT(m, 20, int32_t, 2);                  /* CUPTI_ACTIVITY_OBJECT_THREAD */
  PUT(m, 24, uint32_t, (uint32_t)getpid());
  PUT(m, 28, uint32_t, (uint32_t)gettid());
  PUT(m, 40, const char *, name);
}

/* nvtxRangePushA(name) as CUPTI records it; nothing before NVTX injected this library. */
void fake_range_push(const char *name) {
  pthread_mutex_lock(&lock);
  uint32_t id = ++marker_next;
  if (marker_depth < 64) marker_ids[marker_depth++] = id;
  if (nvtx_injected && ((enabled_mask >> 12) & 1)) marker(2, id, name);
  pthread_mutex_unlock(&lock);
}

/* nvtxRangePop(). */
void fake_range_pop(void) {
  pthread_mutex_lock(&lock);
  if (marker_depth > 0) {
    uint32_t id = marker_ids[--marker_depth];
    if (nvtx_injected && ((enabled_mask >> 12) & 1)) marker(4, id, NULL);
  }
  pthread_mutex_unlock(&lock);
}
#endif
