/* Galloping search over an ascending int64 column, shared by the C extensions of every layer
 * (the XSpace decoder's stat-row owners, the step sweeps' windows): callers look up ascending
 * values, so searching outwards from the previous answer costs O(log gap) per value instead of
 * O(log n). Include after <Python.h> (Py_ssize_t). */
#ifndef STEPSCOPE_GALLOP_H
#define STEPSCOPE_GALLOP_H

#include <stdint.h>

/* First i in a[0..m) where a[i] > x (right) or a[i] >= x (left), searching from hint p. */
static inline Py_ssize_t gallop(const int64_t *a, Py_ssize_t m, int64_t x, int right, Py_ssize_t p) {
#define BEFORE(i) (right ? a[i] <= x : a[i] < x)
    Py_ssize_t lo, hi, step = 1;
    if (p > m) p = m;
    if (p < m && BEFORE(p)) { /* the answer is after p */
        lo = p + 1;
        hi = lo;
        while (hi < m && BEFORE(hi)) {
            lo = hi + 1;
            hi = lo + step;
            step *= 2;
        }
        if (hi > m) hi = m;
    } else { /* the answer is at or before p */
        hi = p;
        Py_ssize_t cand = p - 1;
        while (cand >= 0 && !BEFORE(cand)) {
            hi = cand;
            cand = hi - step;
            step *= 2;
        }
        lo = cand < 0 ? 0 : cand + 1;
    }
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (BEFORE(mid)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
#undef BEFORE
}

#endif
