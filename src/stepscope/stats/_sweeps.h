/* Shared by the sweeps' sources (_sweeps.c, _sweeps_pairs.c): array arguments and the
 * galloping search (../_gallop.h). */
#ifndef STEPSCOPE_SWEEPS_H
#define STEPSCOPE_SWEEPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../_native.h"
#include <stdint.h>

#include "../_gallop.h" /* the galloping search, shared with the decoder */

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

/* The functions of _sweeps_pairs.c, added to the module. */
extern PyMethodDef pair_methods[];

#endif
