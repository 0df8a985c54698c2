/* CUPTI's buffer callbacks in C, so that no CUPTI callback ever needs Python's GIL.
 *
 * CUPTI asks for buffers on whichever thread launches work, possibly while holding its
 * own locks; a Python callback there must take the GIL, and a thread holding the GIL
 * that waits for those locks would deadlock the target. These callbacks only take a
 * private mutex. The agent's Python thread ships full buffers to gtop with
 * gtop_shim_ship(), which writes, re-zeroes and lends them again in C: ctypes releases
 * the GIL for the whole call, so shipping ~25 MB/s of records costs the target's Python
 * threads one GIL handover per agent wake-up, not several per buffer.
 * (gtop_shim_take() and gtop_shim_give() do the same steps one by one.)
 *
 * The shim times itself (gtop_shim_costs()): the time CUPTI's threads spend in its two
 * callbacks, and the time the agent spends shipping, so gtop can show what it costs.
 *
 * Built into gtop/agent/shim_blob.py by tools/gen_shim_blob.py.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#define MAX_BUFFERS 256

typedef int (*dropped_fn)(void *context, uint32_t stream, size_t *dropped);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static size_t buffer_size;
static int max_buffers, allocated, n_free, n_done;
static uint8_t *free_list[MAX_BUFFERS];
static uint8_t *done_buf[MAX_BUFFERS];
static size_t done_valid[MAX_BUFFERS], done_dropped[MAX_BUFFERS];
static uint64_t declined;
/* What is lent: at most buffer_size, sized to the recent rate (next_lend). */
#define MIN_LEND 16384u
#define FAST_NS 250000000u /* a request this soon after the last: lend twice as much */
#define FILL_NS 500000000u /* after a quiet spell: what the rate since fills this long */
static size_t lend_size;
static uint64_t last_request_ns;
static dropped_fn get_dropped;
/* Self-timing, ns and calls: callbacks (on CUPTI's threads) and gtop_shim_ship(). */
static uint64_t callback_ns, callbacks, ship_ns, ships;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Size and count of the buffers, and cuptiActivityGetNumDroppedRecords. */
int gtop_shim_setup(size_t size, int count, dropped_fn fn) {
  if (count < 1 || count > MAX_BUFFERS || size < 1024) return -1;
  pthread_mutex_lock(&mu);
  buffer_size = size;
  lend_size = 0;
  last_request_ns = 0;
  max_buffers = count;
  get_dropped = fn;
  pthread_mutex_unlock(&mu);
  return 0;
}

/* The size to lend at t (mu held): buffers that fill in about FILL_NS at the recent
 * rate. CUPTI hands a full buffer back once its records are complete; a part-filled one
 * only at a flush, and a forced flush takes the kernels still queued on the GPU without
 * end times. So after a quiet spell (a compile, an evaluation) a small buffer fills and
 * comes back within milliseconds of the work resuming, rather than waiting, part-filled,
 * for the forced flush that loses the queue's records (~1,000 on a GPU-bound step). */
static size_t next_lend(uint64_t t) {
  uint64_t gap = last_request_ns ? t - last_request_ns : UINT64_MAX;
  double lend = lend_size ? (double)lend_size : MIN_LEND;
  if (gap < FAST_NS) lend *= 2;
  else if (gap > 2 * (uint64_t)FILL_NS) lend = lend * FILL_NS / (double)gap;
  if (lend > buffer_size) lend = (double)buffer_size;
  if (lend < MIN_LEND) lend = MIN_LEND < buffer_size ? MIN_LEND : (double)buffer_size;
  return (size_t)lend;
}

void gtop_shim_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  uint8_t *b = NULL;
  uint64_t t0 = now_ns();
  pthread_mutex_lock(&mu);
  lend_size = next_lend(t0);
  last_request_ns = t0;
  if (n_free > 0) {
    b = free_list[--n_free];
  } else if (allocated < max_buffers) {
    b = calloc(1, buffer_size); /* zeroed, as CUPTI was promised */
    if (b) allocated++;
  }
  if (!b) declined++;
  callback_ns += now_ns() - t0; /* calloc included: that is what the launch waits for */
  callbacks++;
  pthread_mutex_unlock(&mu);
  *buffer = b;
  *size = b ? lend_size : 0;
  *max_records = 0;
}

void gtop_shim_completed(void *context, uint32_t stream, uint8_t *buffer, size_t size,
                         size_t valid) {
  size_t dropped = 0;
  uint64_t t0 = now_ns();
  (void)size;
  if (get_dropped) get_dropped(context, stream, &dropped);
  pthread_mutex_lock(&mu);
  if (n_done < MAX_BUFFERS) { /* always true: at most MAX_BUFFERS exist */
    done_buf[n_done] = buffer;
    done_valid[n_done] = valid;
    done_dropped[n_done] = dropped;
    n_done++;
  }
  callback_ns += now_ns() - t0;
  callbacks++;
  pthread_mutex_unlock(&mu);
}

/* Move up to cap returned buffers, oldest first, into the arrays; returns how many. */
int gtop_shim_take(uint8_t **buffers, size_t *valid, size_t *dropped, int cap) {
  int n, i;
  pthread_mutex_lock(&mu);
  n = n_done < cap ? n_done : cap;
  for (i = 0; i < n; i++) {
    buffers[i] = done_buf[i];
    valid[i] = done_valid[i];
    dropped[i] = done_dropped[i];
  }
  for (i = n; i < n_done; i++) {
    done_buf[i - n] = done_buf[i];
    done_valid[i - n] = done_valid[i];
    done_dropped[i - n] = done_dropped[i];
  }
  n_done -= n;
  pthread_mutex_unlock(&mu);
  return n;
}

/* Lend a buffer (zeroed by the caller) to CUPTI again. */
void gtop_shim_give(uint8_t *buffer) {
  pthread_mutex_lock(&mu);
  free_list[n_free++] = buffer;
  pthread_mutex_unlock(&mu);
}

/* Free every buffer CUPTI does not hold; returns how many are still allocated. */
int gtop_shim_trim(void) {
  int left;
  pthread_mutex_lock(&mu);
  while (n_free > 0) {
    free(free_list[--n_free]);
    allocated--;
  }
  left = allocated;
  pthread_mutex_unlock(&mu);
  return left;
}

uint64_t gtop_shim_declined(void) { return declined; }

/* CLOCK_MONOTONIC ns of CUPTI's last buffer request (0: none yet): records are flowing. */
uint64_t gtop_shim_last_request(void) {
  uint64_t t;
  pthread_mutex_lock(&mu);
  t = last_request_ns;
  pthread_mutex_unlock(&mu);
  return t;
}

/* The subscriber callback CUPTI's subscriber slot needs. It is C so that CUPTI never waits
   for Python's GIL inside a CUDA call: with a ctypes callback, attaching hung a target whose
   main thread held the GIL in a synchronising call while the agent thread subscribed. */
void gtop_shim_subscriber(void *userdata, int domain, uint32_t cbid, const void *data) {
    (void)userdata;
    (void)domain;
    (void)cbid;
    (void)data;
}

/* out[0..3]: ns in the buffer callbacks, their calls, ns in gtop_shim_ship, its calls. */
void gtop_shim_costs(uint64_t *out) {
  pthread_mutex_lock(&mu);
  out[0] = callback_ns;
  out[1] = callbacks;
  out[2] = ship_ns;
  out[3] = ships;
  pthread_mutex_unlock(&mu);
}

/* One BUFFER frame as gtop/agent/wire.py frames it: HEADER (type, reserved, payload
 * length) and BUFFER_HEAD (dropped, declined), little-endian like the x86-64 host. */
#define FRAME_BUFFER 2
struct frame_head {
  uint32_t type, reserved, length;
  uint64_t dropped, declined;
} __attribute__((packed));

static int64_t now_ms(void) { return (int64_t)(now_ns() / 1000000u); }

/* Write every byte of iov to fd (which may be non-blocking), waiting at most until
 * deadline (CLOCK_MONOTONIC ms) for room; 0 on success, -1 on error or timeout. */
static int send_all(int fd, struct iovec *iov, int n, int64_t deadline) {
  while (n > 0) {
    struct msghdr msg;
    ssize_t sent;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      struct pollfd p;
      int64_t left = deadline - now_ms();
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || left <= 0) return -1;
      p.fd = fd;
      p.events = POLLOUT;
      p.revents = 0;
      if (poll(&p, 1, (int)left) < 0 && errno != EINTR) return -1;
      continue;
    }
    while (n > 0 && (size_t)sent >= iov->iov_len) {
      sent -= iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (uint8_t *)iov->iov_base + sent;
      iov->iov_len -= sent;
    }
  }
  return 0;
}

/* Ship every returned buffer to gtop's socket fd as a BUFFER frame, oldest first, then
 * zero its used part (CUPTI was promised zeroed buffers) and lend it again. A buffer
 * gets at most timeout_ms to go out. Returns the number of frames sent, or -1 when the
 * socket failed or stayed full (the connection is then unusable: a frame may be cut
 * short); every buffer taken is lent again either way. fd < 0 sends nothing and only
 * recycles (returns -1). *bytes_sent (if not NULL) is the payload bytes sent. */
int gtop_shim_ship(int fd, int timeout_ms, uint64_t *bytes_sent) {
  uint8_t *bufs[MAX_BUFFERS];
  size_t valid[MAX_BUFFERS], dropped[MAX_BUFFERS];
  uint64_t declined_now, total = 0;
  int n, i, sent = 0, failed = fd < 0;
  uint64_t t0 = now_ns();
  n = gtop_shim_take(bufs, valid, dropped, MAX_BUFFERS);
  pthread_mutex_lock(&mu);
  declined_now = declined;
  pthread_mutex_unlock(&mu);
  for (i = 0; i < n; i++) {
    if (!failed) {
      struct frame_head head;
      struct iovec iov[2];
      head.type = FRAME_BUFFER;
      head.reserved = 0;
      head.length = (uint32_t)(16 + (bufs[i] ? valid[i] : 0));
      head.dropped = dropped[i];
      head.declined = declined_now;
      iov[0].iov_base = &head;
      iov[0].iov_len = sizeof head;
      iov[1].iov_base = bufs[i];
      iov[1].iov_len = bufs[i] ? valid[i] : 0;
      if (send_all(fd, iov, iov[1].iov_len ? 2 : 1, now_ms() + timeout_ms) == 0) {
        sent++;
        total += bufs[i] ? valid[i] : 0; /* not iov[1].iov_len: send_all advances it */
      } else {
        failed = 1;
      }
    }
    if (bufs[i]) {
      memset(bufs[i], 0, valid[i]);
      gtop_shim_give(bufs[i]);
    }
  }
  if (bytes_sent) *bytes_sent = total;
  pthread_mutex_lock(&mu);
  ship_ns += now_ns() - t0;
  ships++;
  pthread_mutex_unlock(&mu);
  return failed ? -1 : sent;
}
