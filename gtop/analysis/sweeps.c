/* The attribution's loops: sweeps over sorted int64 arrays and the records' projection,
 * each one pass (gtop/analysis/compiled.py loads this, built into
 * gtop/analysis/sweeps_blob.py by tools/gen_shim_blob.py).
 *
 * Every function is the compiled twin of a numpy reference in gtop/analysis/intervals.py,
 * gtop/analysis/attribution/host_window.py or gtop/analysis/attribution/records.py, and returns exactly what that reference returns
 * (tests/analysis/test_compiled.py compares them on random inputs). A function that needs
 * sorted input checks it as it goes and returns -1 when it is not; the caller then does what
 * the reference does. Plain C99, no allocation: the caller gives output arrays big enough.
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

/* out[k] = the index of the last key <= points[k], or -1, by one merge; 0, or -1 when the
 * keys or the points do not ascend (a binary search of unsorted keys is another answer). */
int gtop_last_at_or_before(const int64_t *keys, int64_t n, const int64_t *points, int64_t m,
                           int64_t *out)
{
    int64_t j = 0, prev = INT64_MIN;
    if (!ascending(keys, n))
        return -1;
    for (int64_t k = 0; k < m; k++) {
        int64_t p = points[k];
        if (p < prev)
            return -1;
        prev = p;
        while (j < n && keys[j] <= p)
            j++;
        out[k] = j - 1;
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
#define ARRAYS (2 * SETS + 2)

/* A thread's activity over normal spans (HostIndex.activity): sets[0] are the spans, 1-3
 * the normal sets whose membership each piece records (in an API call, a synchronising
 * call, a launch gap); cuts are the thread's state records' starts and ends (sorted,
 * disjoint). Every time is clipped to [the first span's start, the last span's end]. Each
 * piece between consecutive distinct times that lies in a span is written: its start and
 * end, its state record (the one holding its start, unclipped, or -1), the three
 * memberships as bits 0-2 of flags, and the index of its span. Returns the count. */
int64_t gtop_activity(const int64_t *const starts[SETS], const int64_t *const ends[SETS],
                      const int64_t lens[SETS], const int64_t *cut_t, const int64_t *cut_end,
                      int64_t ncut, int64_t *op, int64_t *oq, int64_t *ostate, uint8_t *oflags,
                      int64_t *ospan)
{
    int64_t lo = starts[0][0], hi = ends[0][lens[0] - 1];
    /* the arrays not yet used up, each with its next (clipped) time and what it counts */
    const int64_t *arr[ARRAYS];
    int64_t left[ARRAYS], next[ARRAYS];
    int which[ARRAYS], delta[ARRAYS], live = 0;
    for (int a = 0; a < ARRAYS; a++) {
        const int64_t *v = a < 2 * SETS ? (a & 1 ? ends : starts)[a / 2] : a & 1 ? cut_end : cut_t;
        int64_t n = a < 2 * SETS ? lens[a / 2] : ncut;
        if (!n)
            continue;
        arr[live] = v;
        left[live] = n;
        next[live] = v[0] < lo ? lo : v[0] > hi ? hi : v[0];
        which[live] = a < 2 * SETS ? a / 2 : -1;
        delta[live] = a < 2 * SETS ? (a & 1 ? -1 : 1) : 0;
        live++;
    }

    int64_t count[SETS] = {0}, opened = 0, m = 0, state = 0, prev_t = 0;
    int have_prev = 0;
    while (live) {
        int64_t t = next[0];
        for (int a = 1; a < live; a++)
            t = next[a] < t ? next[a] : t;
        if (have_prev && count[0] > 0) {
            /* the piece [prev_t, t): its state record holds prev_t */
            while (state < ncut && cut_t[state] <= prev_t)
                state++;
            op[m] = prev_t;
            oq[m] = t;
            ostate[m] = state > 0 && cut_end[state - 1] > prev_t ? state - 1 : -1;
            oflags[m] = (uint8_t)((count[1] > 0) | (count[2] > 0) << 1 | (count[3] > 0) << 2);
            ospan[m] = opened - 1;
            m++;
        }
        int spent = 0;
        for (int a = 0; a < live; a++) {
            while (next[a] == t) {
                if (which[a] >= 0)
                    count[which[a]] += delta[a];
                if (which[a] == 0 && delta[a] > 0)
                    opened++;
                if (!--left[a]) {
                    next[a] = INT64_MAX;
                    spent = 1;
                    break;
                }
                int64_t v = *++arr[a];
                next[a] = v < lo ? lo : v > hi ? hi : v;
            }
        }
        /* drop the arrays used up */
        for (int a = 0; spent && a < live;) {
            if (!left[a]) {
                live--;
                arr[a] = arr[live];
                left[a] = left[live];
                next[a] = next[live];
                which[a] = which[live];
                delta[a] = delta[live];
            } else {
                a++;
            }
        }
        prev_t = t;
        have_prev = 1;
    }
    return m;
}

/* The records' projection (records._project): for each of n rows (src and dst rows
 * sstride and dstride bytes apart), each of nf integer fields read from the source row
 * (spec: source offset, size in bytes, 1 if signed) and written to the target row (target
 * offset, size): widened by sign or zero extension, narrowed by dropping the high bytes
 * (numpy's cast of one integer type to another). Little-endian; fields may be unaligned
 * (numpy's packed records), hence memcpy, which gcc turns into plain moves. */
void gtop_project(const char *src, int64_t sstride, char *dst, int64_t dstride, int64_t n,
                  int64_t nf, const int64_t *spec)
{
    for (int64_t i = 0; i < n; i++, src += sstride, dst += dstride) {
        for (int64_t f = 0; f < nf; f++) {
            const int64_t *s = spec + 5 * f;
            const char *from = src + s[0];
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
