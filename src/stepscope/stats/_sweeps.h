/* Shared by the sweeps' sources (_sweeps.c, _sweeps_pairs.c): array arguments and the
 * galloping search. */
#ifndef STEPSCOPE_SWEEPS_H
#define STEPSCOPE_SWEEPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static inline int get_sized(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->len % itemsize) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "arrays of %zd-byte integers expected", itemsize);
        return -1;
    }
    return 0;
}

static inline void release(Py_buffer *v, int n) {
    for (int k = 0; k < n; k++) PyBuffer_Release(&v[k]);
}

/* The call's n array arguments into v: ``sizes[k]``-byte integers (NULL: all 8 bytes), those
 * from ``first_out`` on writable. On failure nothing is held and -1 is returned. */
static inline int get_args(PyObject *args, Py_buffer *v, int n, const Py_ssize_t *sizes, int first_out) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != n) {
        PyErr_Format(PyExc_TypeError, "%d arrays expected", n);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        PyObject *obj = PyTuple_GET_ITEM(args, k);
        if (get_sized(obj, &v[k], k >= first_out, sizes ? sizes[k] : 8) < 0) {
            release(v, k);
            return -1;
        }
    }
    return 0;
}

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

/* The functions of _sweeps_pairs.c, added to the module. */
extern PyMethodDef pair_methods[];

#endif
