/* A report's hot loops, each one pass: sweeps over sorted int64 arrays (the attribution's
 * interval algebra and host activity), the records' projection and the recordings' column
 * decoding (gtop/analysis/compiled.py loads this, built into gtop/analysis/loops_blob.py by
 * tools/gen_shim_blob.py).
 *
 * Every function is the compiled twin of a numpy reference (in gtop/analysis/intervals.py,
 * attribution/host_window.py, attribution/records.py, gtop/recordings/codec.py) and gives
 * exactly what that reference gives (tests/analysis/test_compiled.py compares them on
 * random inputs). A function that needs sorted input checks it as it goes and returns -1
 * when it is not; the caller then does what the reference does. Plain C99, no allocation
 * (the caller gives output arrays big enough), no library call.
 */
#include <stdint.h>
#include <string.h>

/* union of [s, e) (empty ones dropped) whose kept starts ascend: the maximal intervals,
 * written to os/oe; their count, or -1 when the kept starts do not ascend. */
int64_t gtop_union(const int64_t *s, const int64_t *e, int64_t n, int64_t *os, int64_t *oe)
{
    int64_t m = 0, last = INT64_MIN, head = 0, reach = 0;
    for (int64_t i = 0; i < n; i++) {
        if (e[i] <= s[i])
            continue;
        if (s[i] < last)
            return -1;
        last = s[i];
        if (m && s[i] <= reach) {
            if (e[i] > reach)
                reach = e[i];
            continue;
        }
        if (m) {
            os[m - 1] = head;
            oe[m - 1] = reach;
        }
        head = s[i];
        reach = e[i];
        m++;
    }
    if (m) {
        os[m - 1] = head;
        oe[m - 1] = reach;
    }
    return m;
}

/* a ∩ b of two normal sets (sorted, disjoint, not touching); the count written. */
int64_t gtop_intersect(const int64_t *as, const int64_t *ae, int64_t na, const int64_t *bs,
                       const int64_t *be, int64_t nb, int64_t *os, int64_t *oe)
{
    int64_t i = 0, j = 0, m = 0;
    while (i < na && j < nb) {
        int64_t lo = as[i] > bs[j] ? as[i] : bs[j];
        int64_t hi = ae[i] < be[j] ? ae[i] : be[j];
        if (lo < hi) {
            os[m] = lo;
            oe[m] = hi;
            m++;
        }
        if (ae[i] < be[j])
            i++;
        else
            j++;
    }
    return m;
}

static int ascending(const int64_t *v, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (v[i] < v[i - 1])
            return 0;
    return 1;
}

/* numpy's searchsorted(keys, points, side) + offset, by one merge: out[k] = the number of
 * keys < points[k] (right: <=), plus offset; 0, or -1 when the keys or the points do not
 * ascend (a binary search of unsorted keys is another answer). */
int gtop_search(const int64_t *keys, int64_t n, const int64_t *points, int64_t m, int right,
                int64_t offset, int64_t *out)
{
    int64_t j = 0, prev = INT64_MIN;
    if (!ascending(keys, n))
        return -1;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = points[k];
        if (p < prev)
            return -1;
        prev = p;
        if (right)
            while (j < n && keys[j] <= p)
                j++;
        else
            while (j < n && keys[j] < p)
                j++;
        out[k] = j + offset;
    }
    return 0;
}

/* out[k] = the index of the interval [starts, ends) holding points[k], or -1 (intervals
 * sorted and disjoint): the last start <= the point, if its end is after it; 0, or -1 when
 * the starts or the points do not ascend. */
int gtop_owner(const int64_t *starts, const int64_t *ends, int64_t n, const int64_t *points,
               int64_t m, int64_t *out)
{
    int64_t j = 0, prev = INT64_MIN;
    if (!ascending(starts, n))
        return -1;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = points[k];
        if (p < prev)
            return -1;
        prev = p;
        while (j < n && starts[j] <= p)
            j++;
        out[k] = j > 0 && ends[j - 1] > p ? j - 1 : -1;
    }
    return 0;
}

#define SETS 4

/* The first time after t at which membership of the normal set (s, e) changes, moving
 * *at past the intervals that end by t; *in: whether t is in the set. */
static int64_t set_next(const int64_t *s, const int64_t *e, int64_t n, int64_t *at, int64_t t,
                        int *in)
{
    while (*at < n && e[*at] <= t)
        (*at)++;
    if (*at == n) {
        *in = 0;
        return INT64_MAX;
    }
    *in = s[*at] <= t;
    return *in ? e[*at] : s[*at];
}

/* The first value of the ascending v after t, moving *at past those at or before it. */
static int64_t cut_next(const int64_t *v, int64_t n, int64_t *at, int64_t t)
{
    while (*at < n && v[*at] <= t)
        (*at)++;
    return *at < n ? v[*at] : INT64_MAX;
}

/* A thread's activity over normal spans (HostIndex.activity): sets[0] are the spans, 1-3
 * the normal sets whose membership each piece records (in an API call, a synchronising
 * call, a launch gap); cut_t, cut_end the thread's state records (sorted, disjoint), whose
 * starts and ends also cut pieces. Each span is cut at every start or end of those
 * inside it, and each piece written: its start and end, its state record (the one
 * holding its start, or -1), the three memberships as bits 0-2 of flags, and its span's
 * index. Returns the count. (The numpy reference clips every time to the spans' hull and
 * sweeps them all; times outside the spans cut nothing inside them, so this walks the
 * spans and looks only at what lies in each.) */
int64_t gtop_activity(const int64_t *const starts[SETS], const int64_t *const ends[SETS],
                      const int64_t lens[SETS], const int64_t *cut_t, const int64_t *cut_end,
                      int64_t ncut, int64_t *op, int64_t *oq, int64_t *ostate, uint8_t *oflags,
                      int64_t *ospan)
{
    int64_t at[SETS] = {0}, at_t = 0, at_end = 0, m = 0;
    for (int64_t i = 0; i < lens[0]; i++) {
        int64_t t = starts[0][i], b = ends[0][i];
        while (t < b) {
            int64_t q = b;
            uint8_t flags = 0;
            for (int k = 1; k < SETS; k++) {
                int in;
                int64_t next = set_next(starts[k], ends[k], lens[k], &at[k], t, &in);
                q = next < q ? next : q;
                flags |= (uint8_t)(in << (k - 1));
            }
            int64_t next = cut_next(cut_t, ncut, &at_t, t);
            q = next < q ? next : q;
            next = cut_next(cut_end, ncut, &at_end, t);
            q = next < q ? next : q;
            op[m] = t;
            oq[m] = q;
            /* at_t: the state records starting at or before t */
            ostate[m] = at_t > 0 && cut_end[at_t - 1] > t ? at_t - 1 : -1;
            oflags[m] = flags;
            ospan[m] = i;
            m++;
            t = q;
        }
    }
    return m;
}

/* The records' projection (records._project): for each of n rows (dst rows dstride bytes
 * apart; src rows sstride apart, row index[i] for row i when index is not NULL), each of
 * nf integer fields read from the source row
 * (spec: source offset, size in bytes, 1 if signed) and written to the target row (target
 * offset, size): widened by sign or zero extension, narrowed by dropping the high bytes
 * (numpy's cast of one integer type to another). Little-endian; fields may be unaligned
 * (numpy's packed records), hence memcpy, which gcc turns into plain moves. */
void gtop_project(const char *src, int64_t sstride, const int64_t *index, char *dst,
                  int64_t dstride, int64_t n, int64_t nf, const int64_t *spec)
{
    for (int64_t i = 0; i < n; i++, dst += dstride) {
        const char *row = src + (index ? index[i] : i) * sstride;
        for (int64_t f = 0; f < nf; f++) {
            const int64_t *s = spec + 5 * f;
            const char *from = row + s[0];
            char *to = dst + s[3];
            int64_t v;
            switch (s[1] * 2 + s[2]) {
            case 2: { uint8_t x; memcpy(&x, from, 1); v = x; break; }
            case 3: { int8_t x; memcpy(&x, from, 1); v = x; break; }
            case 4: { uint16_t x; memcpy(&x, from, 2); v = x; break; }
            case 5: { int16_t x; memcpy(&x, from, 2); v = x; break; }
            case 8: { uint32_t x; memcpy(&x, from, 4); v = x; break; }
            case 9: { int32_t x; memcpy(&x, from, 4); v = x; break; }
            default: memcpy(&v, from, 8); break;
            }
            switch (s[4]) {
            case 1: { uint8_t x = (uint8_t)v; memcpy(to, &x, 1); break; }
            case 2: { uint16_t x = (uint16_t)v; memcpy(to, &x, 2); break; }
            case 4: { uint32_t x = (uint32_t)v; memcpy(to, &x, 4); break; }
            default: memcpy(to, &v, 8); break;
            }
        }
    }
}

#define BLOCK_ROWS 2048

/* One column's rows a to z from its byte planes p (n values of SIZE bytes, little-endian:
 * all first bytes, then all second bytes, ...), summed up into *sum when delta. */
#define UNSHUFFLE(T, SIZE)                                                                   \
    for (int64_t i = a; i < z; i++, to += stride) {                                          \
        uint64_t v = 0;                                                                      \
        for (int b = 0; b < SIZE; b++)                                                       \
            v |= (uint64_t)p[b * n + i] << (8 * b);                                          \
        if (delta)                                                                           \
            v = *sum += v;                                                                   \
        T x = (T)v;                                                                          \
        memcpy(to, &x, SIZE);                                                                \
    }

/* A recording's chunk (recordings/codec.py decode): ncol columns, each of n values stored
 * as byte planes in buf, written into the n rows of dst (stride bytes apart). spec holds
 * 5 int64 per column: its planes' offset in buf, its size (1, 2, 4 or 8 bytes), 1 when
 * stored as deltas (summed up, wrapping in the column's type as numpy's cumsum in it
 * does), its field's offset in a row, and the running sum (0 at first). Rows are done a
 * block at a time, every column of a block before the next, so the rows being filled
 * stay in cache. */
void gtop_unshuffle(const uint8_t *buf, int64_t n, int64_t ncol, int64_t *spec, char *dst,
                    int64_t stride)
{
    for (int64_t a = 0; a < n; a += BLOCK_ROWS) {
        int64_t z = n - a < BLOCK_ROWS ? n : a + BLOCK_ROWS;
        for (int64_t c = 0; c < ncol; c++) {
            int64_t *col = spec + 5 * c;
            const uint8_t *p = buf + col[0];
            int delta = col[2] != 0;
            uint64_t *sum = (uint64_t *)&col[4];
            char *to = dst + a * stride + col[3];
            switch (col[1]) {
            case 1: UNSHUFFLE(uint8_t, 1) break;
            case 2: UNSHUFFLE(uint16_t, 2) break;
            case 4: UNSHUFFLE(uint32_t, 4) break;
            default: UNSHUFFLE(uint64_t, 8) break;
            }
        }
    }
}

/* partition.stream_keys: per row (stride bytes apart), (pid << 40) | ((device & 0xFF) << 32)
 * | stream, from the int32 pid, int16 device and uint32 stream at the offsets given. */
void gtop_stream_keys(const char *rows, int64_t stride, int64_t n, int64_t pid_at,
                      int64_t device_at, int64_t stream_at, int64_t *out)
{
    for (int64_t i = 0; i < n; i++, rows += stride) {
        int32_t pid;
        int16_t device;
        uint32_t stream;
        memcpy(&pid, rows + pid_at, 4);
        memcpy(&device, rows + device_at, 2);
        memcpy(&stream, rows + stream_at, 4);
        out[i] = (int64_t)((uint64_t)(int64_t)pid << 40 | (uint64_t)(device & 0xFF) << 32 | stream);
    }
}

/* slices.occupancy_of: ns of each code in each slice (out: nslice rows of ncode, zeroed)
 * for segments [starts, ends) with codes < ncode, sorted by start and disjoint, clipped to
 * [edges[0], edges[nslice]]; each cut at the (ascending) slice edges it crosses. 0, or -1
 * when the starts do not ascend. */
int gtop_occupancy(const int64_t *starts, const int64_t *ends, const int64_t *codes, int64_t n,
                   const int64_t *edges, int64_t nslice, int64_t ncode, int64_t *out)
{
    int64_t k = 0, prev = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = starts[i], e = ends[i];
        if (s < prev)
            return -1;
        prev = s;
        s = s < edges[0] ? edges[0] : s;
        e = e > edges[nslice] ? edges[nslice] : e;
        if (e <= s)
            continue;
        while (edges[k + 1] <= s)
            k++;
        for (int64_t j = k; s < e; j++) {
            int64_t cut = e < edges[j + 1] ? e : edges[j + 1];
            out[j * ncode + codes[i]] += cut - s;
            s = cut;
        }
    }
    return 0;
}

/* Rule 2's previous ops (partition._Prepared._eligible): for each op, in the order given,
 * the latest end and submit time of the ops before it on its stream (stream[i] <
 * nstream) that are not in its run of equal starts (the consecutive ops of the stream
 * with its start), or never when there are none. work: 6 * nstream int64, zeroed. */
void gtop_previous(const int64_t *stream, const int64_t *start, const int64_t *end,
                   const int64_t *sub, int64_t n, int64_t nstream, int64_t never,
                   int64_t *prev_end, int64_t *prev_sub, int64_t *work)
{
    int64_t *seen = work, *run_start = work + nstream;
    int64_t *max_end = work + 2 * nstream, *max_sub = work + 3 * nstream;
    int64_t *before_end = work + 4 * nstream, *before_sub = work + 5 * nstream;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = stream[i];
        if (!seen[s] || start[i] != run_start[s]) { /* a new run: what came before it */
            before_end[s] = seen[s] ? max_end[s] : never;
            before_sub[s] = seen[s] ? max_sub[s] : never;
            run_start[s] = start[i];
        }
        prev_end[i] = before_end[s];
        prev_sub[i] = before_sub[s];
        max_end[s] = seen[s] && max_end[s] > end[i] ? max_end[s] : end[i];
        max_sub[s] = seen[s] && max_sub[s] > sub[i] ? max_sub[s] : sub[i];
        seen[s] = 1;
    }
}

/* default_mode.thread_in: for each query i, the first thread k (in the order given) of its
 * process (tpid[k] == pid[i]) whose normal spans (starts/ends[off[k]:off[k + 1]]) hold
 * at[i]; its tid written to out[i], which is left as it is when none does. Each thread's
 * spans are walked forward while the times ascend, searched when one goes back. */
void gtop_thread_in(const int64_t *pid, const int64_t *at, int64_t n, int64_t nthread,
                    const int64_t *tid, const int64_t *tpid, const int64_t *off,
                    const int64_t *starts, const int64_t *ends, int64_t *cursor, int32_t *out)
{
    for (int64_t k = 0; k < nthread; k++)
        cursor[k] = off[k] - 1; /* the last span starting at or before the time (none yet) */
    for (int64_t i = 0; i < n; i++) {
        int64_t x = at[i];
        for (int64_t k = 0; k < nthread; k++) {
            if (tpid[k] != pid[i])
                continue;
            int64_t lo = off[k], hi = off[k + 1], j = cursor[k];
            if (j >= lo && starts[j] > x) { /* back in time: search */
                int64_t a = lo, b = hi; /* the first start > x */
                while (a < b) {
                    int64_t mid = a + (b - a) / 2;
                    if (starts[mid] <= x)
                        a = mid + 1;
                    else
                        b = mid;
                }
                j = a - 1;
            } else {
                while (j + 1 < hi && starts[j + 1] <= x)
                    j++;
            }
            cursor[k] = j;
            if (j >= lo && ends[j] > x) {
                out[i] = (int32_t)tid[k];
                break;
            }
        }
    }
}

/* intervals.take: out[i] = values[index[i]] (values size bytes each, stride bytes apart,
 * nvalues > 0; an index past the end taken as the last, numpy's clip mode), or the size
 * bytes at fill where index[i] < 0. */
void gtop_take(const char *values, int64_t stride, int64_t nvalues, int64_t size,
               const int64_t *index, int64_t n, const char *fill, char *out)
{
    for (int64_t i = 0; i < n; i++, out += size) {
        int64_t k = index[i];
        const char *from = k < 0 ? fill : values + (k < nvalues ? k : nvalues - 1) * stride;
        switch (size) {
        case 1: memcpy(out, from, 1); break;
        case 2: memcpy(out, from, 2); break;
        case 4: memcpy(out, from, 4); break;
        default: memcpy(out, from, 8); break;
        }
    }
}

#define GROUPS 64

/* The group of key k among the distinct keys seen (added when new, while there is room):
 * its index, or -1 when there are GROUPS already. *last: the previous row's group. */
static int group_of(int64_t k, int64_t *distinct, int *nd, int *last)
{
    if (*last >= 0 && distinct[*last] == k)
        return *last;
    for (int g = 0; g < *nd; g++)
        if (distinct[g] == k)
            return *last = g;
    if (*nd == GROUPS)
        return -1;
    distinct[*nd] = k;
    return *last = (*nd)++;
}

/* numpy's stable argsort of keys with few distinct values (at most GROUPS), by counting:
 * order[] = the rows by key, each key's rows in their order. 0, or -1 when there are more
 * distinct keys. */
int gtop_group_order(const int64_t *key, int64_t n, int64_t *order)
{
    int64_t distinct[GROUPS], count[GROUPS] = {0}, at[GROUPS];
    int nd = 0, last = -1, rank[GROUPS];
    for (int64_t i = 0; i < n; i++) {
        int g = group_of(key[i], distinct, &nd, &last);
        if (g < 0)
            return -1;
        count[g]++;
    }
    /* each group's first position: the groups in key order */
    for (int g = 0; g < nd; g++) {
        rank[g] = 0;
        for (int h = 0; h < nd; h++)
            rank[g] += distinct[h] < distinct[g];
    }
    for (int g = 0; g < nd; g++) {
        at[g] = 0;
        for (int h = 0; h < nd; h++)
            if (rank[h] < rank[g])
                at[g] += count[h];
    }
    last = -1;
    for (int64_t i = 0; i < n; i++)
        order[at[group_of(key[i], distinct, &nd, &last)]++] = i;
    return 0;
}

/* KernelStats.add's sums per kernel name id over a kernel table's complete rows (an end
 * not before a start >= 0; cuda_activity.kernel_groups_reference): n rows stride bytes
 * apart, at[] the offsets of int64 t_ns and end_ns, uint32 name_id and stream, and int32
 * grid_x, grid_y and grid_z. Each id below nslot gets a group (slot[id], -1 until then) in
 * order of first appearance: its id, count, duration total (summed as doubles in row
 * order, as numpy's weighted bincount), longest and shortest duration, last row number,
 * and whether its rows' grids are not all the same (first: 3 int32 per group, its first
 * grid). Per complete row, in order: its group (inverse) and stream. Returns the number
 * of complete rows, or -1 when an id is nslot or more. Group arrays hold min(n, nslot). */
int64_t gtop_kernel_stats(const char *rows, int64_t stride, int64_t n, const int64_t *at,
                          int64_t *slot, int64_t nslot, int64_t *ngroup, int64_t *id,
                          int64_t *count, double *total, int64_t *max, int64_t *min,
                          int64_t *last, uint8_t *varies, int32_t *first, int64_t *inverse,
                          int64_t *stream)
{
    int64_t m = 0, ng = 0;
    for (int64_t r = 0; r < n; r++) {
        const char *k = rows + r * stride;
        int64_t t, end;
        uint32_t name, s;
        int32_t grid[3];
        memcpy(&t, k + at[0], 8);
        memcpy(&end, k + at[1], 8);
        if (end < t || t < 0)
            continue;
        memcpy(&name, k + at[2], 4);
        memcpy(&s, k + at[3], 4);
        memcpy(&grid[0], k + at[4], 4);
        memcpy(&grid[1], k + at[5], 4);
        memcpy(&grid[2], k + at[6], 4);
        if (name >= nslot)
            return -1;
        int64_t g = slot[name], d = end - t;
        if (g < 0) {
            g = slot[name] = ng++;
            id[g] = name;
            count[g] = 0;
            total[g] = 0.0;
            max[g] = -1;
            min[g] = (int64_t)1 << 62;
            varies[g] = 0;
            memcpy(first + 3 * g, grid, sizeof grid);
        } else if (memcmp(first + 3 * g, grid, sizeof grid)) {
            varies[g] = 1;
        }
        count[g]++;
        total[g] += (double)d;
        max[g] = d > max[g] ? d : max[g];
        min[g] = d < min[g] ? d : min[g];
        last[g] = r;
        inverse[m] = g;
        stream[m++] = s;
    }
    *ngroup = ng;
    return m;
}

/* default_mode.own_calls, its result written where the join keeps it: of the n ops (rows
 * ostride bytes apart; int32 pid, uint32 correlation and graph at the offsets given) those
 * with mask[i] set and a non-zero correlation must have strictly ascending keys
 * (pid << 32 | correlation), else -1 and nothing written (the numpy reference decides).
 * The launched ones (mask, graph 0) take the launch marks in turn (rows mstride bytes
 * apart, int64 end and int32 tid at the offsets given; -1 when there are fewer than
 * nmark), and those with a correlation get their mark's end and tid in api_end[i] and
 * api_tid[i]. Returns 0. */
int gtop_own_calls(const char *ops, int64_t ostride, int64_t n, const uint8_t *mask,
                   int64_t pid_at, int64_t corr_at, int64_t graph_at, const char *marks,
                   int64_t mstride, int64_t nmark, int64_t end_at, int64_t tid_at,
                   int64_t *api_end, int32_t *api_tid)
{
    int64_t prev = 0, launched = 0;
    int seen = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *op = ops + i * ostride;
        int32_t pid;
        uint32_t corr, graph;
        if (!mask[i])
            continue;
        memcpy(&corr, op + corr_at, 4);
        memcpy(&graph, op + graph_at, 4);
        launched += graph == 0;
        if (!corr)
            continue;
        memcpy(&pid, op + pid_at, 4);
        int64_t key = (int64_t)((uint64_t)(int64_t)pid << 32) | (int64_t)corr;
        if (seen && key <= prev)
            return -1;
        prev = key;
        seen = 1;
    }
    if (launched > nmark)
        return -1;
    for (int64_t i = 0, j = 0; i < n; i++) {
        const char *op = ops + i * ostride;
        uint32_t corr, graph;
        if (!mask[i])
            continue;
        memcpy(&graph, op + graph_at, 4);
        if (graph)
            continue;
        memcpy(&corr, op + corr_at, 4);
        if (corr) {
            const char *mark = marks + j * mstride;
            memcpy(&api_end[i], mark + end_at, 8);
            memcpy(&api_tid[i], mark + tid_at, 4);
        }
        j++;
    }
    return 0;
}

/* default_mode.launch_marks' rows (its reference: launch_rows_reference): for each op i of
 * n (rows ostride bytes apart; int64 t, int32 pid and uint32 correlation at the offsets
 * oat[0..2]) with launched[i] set, in order, one API row (mstride bytes apart; int64 t and
 * end, int32 pid and tid, uint32 correlation, uint8 class at the offsets mat[0..5]): the
 * op's t, t + mark_ns, pid, tid 0, correlation and cls; and, per row, the pid and the
 * time t - before (int64) at which its thread is looked for. Returns the count. */
int64_t gtop_launch_marks(const char *ops, int64_t ostride, int64_t n, const uint8_t *launched,
                          const int64_t *oat, char *marks, int64_t mstride, const int64_t *mat,
                          int64_t mark_ns, int64_t before, int64_t cls, int64_t *pid_out,
                          int64_t *at_out)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!launched[i])
            continue;
        const char *op = ops + i * ostride;
        char *mark = marks + m * mstride;
        int64_t t, end;
        int32_t pid, tid = 0;
        uint32_t corr;
        uint8_t c = (uint8_t)cls;
        memcpy(&t, op + oat[0], 8);
        memcpy(&pid, op + oat[1], 4);
        memcpy(&corr, op + oat[2], 4);
        end = (int64_t)((uint64_t)t + (uint64_t)mark_ns);
        memcpy(mark + mat[0], &t, 8);
        memcpy(mark + mat[1], &end, 8);
        memcpy(mark + mat[2], &pid, 4);
        memcpy(mark + mat[3], &tid, 4);
        memcpy(mark + mat[4], &corr, 4);
        memcpy(mark + mat[5], &c, 1);
        pid_out[m] = pid;
        at_out[m++] = (int64_t)((uint64_t)t - (uint64_t)before);
    }
    return m;
}

/* A normal set being built from intervals met in order of their starts (or, mirrored, of
 * their ends), clipped to [t0, t1) as each is closed. */
typedef struct {
    int64_t *s, *e, m, lo, hi;
    int open;
} Run;

static void run_close(Run *r, int64_t t0, int64_t t1)
{
    int64_t s = r->lo > t0 ? r->lo : t0, e = r->hi < t1 ? r->hi : t1;
    if (r->open && e > s) {
        r->s[r->m] = s;
        r->e[r->m++] = e;
    }
}

/* [s, e) (not empty), its start at or after every start before it */
static void run_forward(Run *r, int64_t s, int64_t e, int64_t t0, int64_t t1)
{
    if (r->open && s <= r->hi) {
        if (e > r->hi)
            r->hi = e;
        return;
    }
    run_close(r, t0, t1);
    r->lo = s;
    r->hi = e;
    r->open = 1;
}

/* [s, e) (not empty), its end at or before every end before it */
static void run_backward(Run *r, int64_t s, int64_t e, int64_t t0, int64_t t1)
{
    if (r->open && e >= r->lo) {
        if (s < r->lo)
            r->lo = s;
        return;
    }
    run_close(r, t0, t1);
    r->lo = s;
    r->hi = e;
    r->open = 1;
}

static void reverse(int64_t *s, int64_t *e, int64_t m)
{
    for (int64_t a = 0, b = m - 1; a < b; a++, b--) {
        int64_t x = s[a], y = e[a];
        s[a] = s[b];
        e[a] = e[b];
        s[b] = x;
        e[b] = y;
    }
}

/* Gap g closes at t: its next op is the first starting at or after t (at[0] walks the
 * ops forward); its thread, the next op's if it has one, else the previous op's (gtid[g]
 * on entry), else main; the next op's kind and label (-1: none). */
static void gap_closes(const int64_t *start, int64_t n, const char *ops, int64_t ostride,
                       const int64_t *oat, const int32_t *tid, int64_t main, int64_t t,
                       int64_t *at, int64_t g, int64_t *gtid, int16_t *gkind, int64_t *glabel)
{
    while (*at < n && start[*at] < t)
        (*at)++;
    int64_t next_tid = *at < n ? tid[*at] : -1;
    gtid[g] = next_tid >= 0 ? next_tid : gtid[g] >= 0 ? gtid[g] : main;
    if (*at < n) {
        const char *row = ops + *at * ostride;
        gkind[g] = (uint8_t)row[oat[0]];
        memcpy(&glabel[g], row + oat[1], 8);
    } else {
        gkind[g] = -1;
        glabel[g] = -1;
    }
}

/* Rules 1 and 2 of a unit's window [t0, t1), and rule 3's choice of a thread per gap
 * (attribution/segments.py, its reference: device_segments_reference): n ops in
 * canonical order (start ascending; end >= start; sub <= elig <= start), rows ostride
 * bytes apart holding their uint8 kind and int64 label at oat[0], oat[1]; tid: each op's
 * submitting thread (-1: none); main: the unit's main thread.
 * Each instant's cause, in priority order codes[0..5]: a kernel runs (kind == kernel),
 * a comm kernel (kind == comm), a copy (any other), some op waits in [elig, start)
 * (queue), in [sub, start) (stall), else the host's (codes[5]). Writes the maximal runs
 * of one cause (os, oe, oc) with their gap (og: the index of the maximal off-GPU run
 * holding them, -1 when on-GPU); the host's runs again (hs, he, hg); and per gap its
 * charged thread (gtid: that of the first op starting at or after its end, else of the
 * op with the latest end at or before its start, the last of equal ends, else main)
 * and the first op's kind and label (-1: none). work: 10n int64; os..og: 4n + 1 each
 * (run edges are ops' start, end, elig and sub times), hs..hg: 2n + 1 each (host runs
 * are never adjacent), gtid..glabel: n + 1 each. Returns 0 with the counts of runs,
 * host runs and gaps in count[0..2], or -1 when the ops are not so ordered. */
int gtop_segments(const int64_t *start, const int64_t *end, const int64_t *sub,
                  const int64_t *elig, const char *ops, int64_t ostride, const int64_t *oat,
                  const int32_t *tid, int64_t main, int64_t n, int64_t kernel, int64_t comm,
                  int64_t t0, int64_t t1, const uint8_t *codes, int64_t *work, int64_t *os,
                  int64_t *oe, uint8_t *oc, int64_t *og, int64_t *hs, int64_t *he, int64_t *hg,
                  int64_t *gtid, int16_t *gkind, int64_t *glabel, int64_t *count)
{
    Run set[5];
    for (int k = 0; k < 5; k++) {
        set[k].s = work + 2 * k * n;
        set[k].e = work + (2 * k + 1) * n;
        set[k].m = set[k].lo = set[k].hi = 0;
        set[k].open = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (end[i] < start[i] || elig[i] > start[i] || sub[i] > elig[i] ||
            (i && start[i] < start[i - 1]))
            return -1;
        if (end[i] > start[i]) {
            uint8_t kind = (uint8_t)ops[i * ostride + oat[0]];
            run_forward(&set[kind == kernel ? 0 : kind == comm ? 1 : 2], start[i], end[i], t0,
                        t1);
        }
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        if (elig[i] < start[i])
            run_backward(&set[3], elig[i], start[i], t0, t1);
        if (sub[i] < start[i])
            run_backward(&set[4], sub[i], start[i], t0, t1);
    }
    for (int k = 0; k < 5; k++) {
        run_close(&set[k], t0, t1);
        if (k >= 3)
            reverse(set[k].s, set[k].e, set[k].m);
    }
    int64_t m = 0, h = 0, g = -1, t = t0, at[5] = {0, 0, 0, 0, 0};
    int64_t next_op = 0, seen = 0, prev_op = -1;
    int off_run = 0, last = -1;
    while (t < t1) {
        int64_t next = t1;
        int cause = 5;
        for (int k = 0; k < 5; k++) {
            const Run *r = &set[k];
            while (at[k] < r->m && r->e[at[k]] <= t)
                at[k]++;
            if (at[k] == r->m)
                continue;
            if (r->s[at[k]] <= t) {
                if (cause == 5)
                    cause = k;
                if (r->e[at[k]] < next)
                    next = r->e[at[k]];
            } else if (r->s[at[k]] < next)
                next = r->s[at[k]];
        }
        int off = cause >= 3;
        if (off && !off_run) { /* a gap opens: no op covers t, so those starting by t
                                  are those ending by t */
            for (g++; seen < n && start[seen] <= t; seen++)
                if (prev_op < 0 || end[seen] >= end[prev_op])
                    prev_op = seen;
            gtid[g] = prev_op >= 0 ? tid[prev_op] : -1;
        } else if (!off && off_run)
            gap_closes(start, n, ops, ostride, oat, tid, main, t, &next_op, g, gtid, gkind, glabel);
        off_run = off;
        if (m && cause == last) { /* a run goes on where another set's interval ended */
            oe[m - 1] = next;
            if (cause == 5)
                he[h - 1] = next;
        } else {
            os[m] = t;
            oe[m] = next;
            oc[m] = codes[cause];
            og[m++] = off ? g : -1;
            if (cause == 5) {
                hs[h] = t;
                he[h] = next;
                hg[h++] = g;
            }
        }
        last = cause;
        t = next;
    }
    if (off_run)
        gap_closes(start, n, ops, ostride, oat, tid, main, t1, &next_op, g, gtid, gkind, glabel);
    count[0] = m;
    count[1] = h;
    count[2] = g + 1;
    return 0;
}

/* A unit's partition from its runs (gtop_segments' os..og: m of them) with the k-th host
 * run (cause codes[0]; nhost of them) replaced by its pieces (ps, pe, pc: those with
 * prun == k, consecutive, np of them) (attribution/segments.py, its reference:
 * assemble_reference). Each segment's gap g (a piece: its run's) gives its charged
 * thread gap_tid[g] (-1 where g < 0 or the cause is codes[1] or codes[2], queue and
 * stall), its next op's kind and label (-1 where g < 0). work: 2 * nhost int64, zeroed.
 * Returns the count written (at most cap), or -1 when the runs, pieces and gaps (ngap)
 * do not fit together so. */
int64_t gtop_assemble(const int64_t *rs, const int64_t *re, const uint8_t *rc, const int64_t *rg,
                      int64_t m, const int64_t *ps, const int64_t *pe, const uint8_t *pc,
                      const int64_t *prun, int64_t np, int64_t nhost, const uint8_t *codes,
                      const int64_t *gap_tid, const int16_t *gap_kind, const int64_t *gap_label,
                      int64_t ngap, int64_t *work, int64_t cap, int64_t *os, int64_t *oe,
                      uint8_t *oc, int32_t *otid, int16_t *okind, int64_t *olabel)
{
    int64_t *first = work, *count = work + nhost, n = 0, k = 0;
    for (int64_t j = 0; j < np; j++) {
        int64_t r = prun[j];
        if (r < 0 || r >= nhost || (count[r] && prun[j - 1] != r))
            return -1;
        if (!count[r]++)
            first[r] = j;
    }
    for (int64_t i = 0; i < m; i++) {
        int64_t g = rg[i], a = i, b = i + 1;
        const int64_t *s = rs, *e = re;
        const uint8_t *c = rc;
        if (g < -1 || g >= ngap)
            return -1;
        if (rc[i] == codes[0]) {
            if (k == nhost)
                return -1;
            a = first[k];
            b = a + count[k++];
            s = ps;
            e = pe;
            c = pc;
        }
        if (n + (b - a) > cap)
            return -1;
        for (int64_t j = a; j < b; j++, n++) {
            int charged = g >= 0 && c[j] != codes[1] && c[j] != codes[2];
            os[n] = s[j];
            oe[n] = e[j];
            oc[n] = c[j];
            otid[n] = charged ? (int32_t)gap_tid[g] : -1;
            okind[n] = g >= 0 ? gap_kind[g] : -1;
            olabel[n] = g >= 0 ? gap_label[g] : -1;
        }
    }
    return k == nhost ? n : -1;
}

/* A thread's API sets of HostIndex.activity (attribution/host_window.py, its reference:
 * api_sets_reference), in one pass over its n calls (rows stride bytes apart: int64 t and
 * end, uint8 class at at[0..2]; t ascending): the union of the calls overlapping the
 * normal spans (ss, se: nspan), and of those of them whose class is marked in sync[256];
 * the holes shorter than gap_ns between consecutive pieces of the union of every call
 * whose class is marked in path[256] (none when gap_ns <= 0). Unions drop empty calls
 * and are not clipped. Each set written to its pair of outputs (n each), its count to
 * count[0..2]; 0, or -1 when t does not ascend. */
int gtop_api_sets(const char *rows, int64_t stride, int64_t n, const int64_t *at,
                  const uint8_t *path, const uint8_t *sync, const int64_t *ss, const int64_t *se,
                  int64_t nspan, int64_t gap_ns, int64_t *as, int64_t *ae, int64_t *ys,
                  int64_t *ye, int64_t *gs, int64_t *ge, int64_t *count)
{
    Run api = {as, ae, 0, 0, 0, 0}, in_sync = {ys, ye, 0, 0, 0, 0};
    int64_t j = 0, prev = INT64_MIN, g = 0, reach = 0;
    int open = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *row = rows + i * stride;
        int64_t t, end;
        uint8_t cls = (uint8_t)row[at[2]];
        memcpy(&t, row + at[0], 8);
        memcpy(&end, row + at[1], 8);
        if (t < prev)
            return -1;
        prev = t;
        if (end <= t)
            continue;
        while (j < nspan && se[j] <= t)
            j++;
        if (j < nspan && ss[j] < end) { /* the first span ending after t holds part of it */
            run_forward(&api, t, end, INT64_MIN, INT64_MAX);
            if (sync[cls])
                run_forward(&in_sync, t, end, INT64_MIN, INT64_MAX);
        }
        if (!path[cls] || gap_ns <= 0)
            continue;
        if (open && t <= reach) {
            if (end > reach)
                reach = end;
            continue;
        }
        if (open && (int64_t)((uint64_t)t - (uint64_t)reach) < gap_ns) {
            gs[g] = reach; /* the hole before a new piece of the launch path */
            ge[g++] = t;
        }
        reach = end;
        open = 1;
    }
    run_close(&api, INT64_MIN, INT64_MAX);
    run_close(&in_sync, INT64_MIN, INT64_MAX);
    count[0] = api.m;
    count[1] = in_sync.m;
    count[2] = g;
    return 0;
}

/* Rule 2's submit times of _Prepared (attribution/partition.py, its reference:
 * submit_reference), for n ops (rows stride bytes apart: int64 submitted and queued,
 * uint32 graph at oat[0..2]): the CUPTI submitted stamp when positive, else the end of the
 * op's API call when it has one (api_tid >= 0), else the queued stamp when positive,
 * else its start; at most its start. keep[i]: the op ends after t0 and was submitted
 * before t1. Returns the count kept (first and last kept in span[0..1]), or -1 when an
 * op marked inferred is a graph node (their submits need graph_submits). */
int64_t gtop_submit(const char *ops, int64_t stride, const int64_t *oat, int64_t n,
                    const int64_t *api_end, const int32_t *api_tid, const int64_t *start,
                    const int64_t *end, const uint8_t *inferred, int64_t t0, int64_t t1,
                    int64_t *sub, uint8_t *keep, int64_t *span)
{
    int64_t m = 0;
    span[0] = span[1] = -1;
    for (int64_t i = 0; i < n; i++) {
        const char *row = ops + i * stride;
        int64_t submitted, queued, s;
        uint32_t graph;
        memcpy(&submitted, row + oat[0], 8);
        memcpy(&queued, row + oat[1], 8);
        memcpy(&graph, row + oat[2], 4);
        if (inferred[i] && graph != 0)
            return -1;
        s = submitted > 0 ? submitted : api_tid[i] >= 0 ? api_end[i] : queued > 0 ? queued : start[i];
        sub[i] = s < start[i] ? s : start[i];
        keep[i] = end[i] > t0 && sub[i] < t1;
        if (keep[i]) {
            if (!m++)
                span[0] = i;
            span[1] = i;
        }
    }
    return m;
}
