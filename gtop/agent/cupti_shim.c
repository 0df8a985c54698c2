/* CUPTI's buffer callbacks in C, so that no CUPTI callback ever needs Python's GIL.
 *
 * CUPTI asks for buffers on whichever thread launches work, possibly while holding its
 * own locks; a Python callback there must take the GIL, and a thread holding the GIL
 * that waits for those locks would deadlock the target. These callbacks only take a
 * private mutex. The agent's Python thread collects full buffers with gtop_shim_take()
 * and lends them back with gtop_shim_give().
 *
 * Built into gtop/agent/shim_blob.py by tests/agent/gen_shim_blob.py.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define MAX_BUFFERS 256

typedef int (*dropped_fn)(void *context, uint32_t stream, size_t *dropped);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static size_t buffer_size;
static int max_buffers, allocated, n_free, n_done;
static uint8_t *free_list[MAX_BUFFERS];
static uint8_t *done_buf[MAX_BUFFERS];
static size_t done_valid[MAX_BUFFERS], done_dropped[MAX_BUFFERS];
static uint64_t declined;
static dropped_fn get_dropped;

/* Size and count of the buffers, and cuptiActivityGetNumDroppedRecords. */
int gtop_shim_setup(size_t size, int count, dropped_fn fn) {
  if (count < 1 || count > MAX_BUFFERS || size < 1024) return -1;
  pthread_mutex_lock(&mu);
  buffer_size = size;
  max_buffers = count;
  get_dropped = fn;
  pthread_mutex_unlock(&mu);
  return 0;
}

void gtop_shim_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&mu);
  if (n_free > 0) {
    b = free_list[--n_free];
  } else if (allocated < max_buffers) {
    b = calloc(1, buffer_size); /* zeroed, as CUPTI was promised */
    if (b) allocated++;
  }
  if (!b) declined++;
  pthread_mutex_unlock(&mu);
  *buffer = b;
  *size = b ? buffer_size : 0;
  *max_records = 0;
}

void gtop_shim_completed(void *context, uint32_t stream, uint8_t *buffer, size_t size,
                         size_t valid) {
  size_t dropped = 0;
  (void)size;
  if (get_dropped) get_dropped(context, stream, &dropped);
  pthread_mutex_lock(&mu);
  if (n_done < MAX_BUFFERS) { /* always true: at most MAX_BUFFERS exist */
    done_buf[n_done] = buffer;
    done_valid[n_done] = valid;
    done_dropped[n_done] = dropped;
    n_done++;
  }
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
