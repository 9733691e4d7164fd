/* The event that owns each of some stat rows, from the decoded stat offsets (CSR layout: the
 * stats of event e are rows stat_start[e] - stat_start[0] .. stat_start[e + 1] - stat_start[0]).
 *
 * row_owners(stat_start, rows, out): out[k] = that event for rows[k], which is
 *   searchsorted(stat_start, rows[k] + stat_start[0], "right") - 1 (an event without stats
 *   owns no row). stat_start is int64 (n_events + 1, ascending); rows and out are both int32
 *   or both int64, out writable and as long as rows. Each search gallops from the previous
 *   answer, so ascending rows (a key's rows, as the profile finds them) cost O(log gap) each:
 *   no column of every row's event is needed to answer for a few keys.
 *
 * Why C: the model kept such a column (4 B per stat row, 114 MB at 20M events) for the
 * profile's life to answer about ten keys, and NumPy's binary searches cost 0.2 s per 6M rows.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../_gallop.h"
#include "_fastwire.h"

static PyObject *row_owners(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    if (!PyArg_ParseTuple(args, "OOO", &objs[0], &objs[1], &objs[2])) return NULL;
    Py_buffer v[3];
    int held = 0;
    PyObject *result = NULL;
    for (; held < 3; held++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (held == 2 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[held], &v[held], flags) < 0) goto done;
    }
    Py_ssize_t width = v[1].itemsize;
    int aligned = 1;
    for (int k = 0; k < 3; k++)
        if (v[k].itemsize <= 0 || (uintptr_t)v[k].buf % (uintptr_t)v[k].itemsize) aligned = 0;
    if (!aligned || v[0].itemsize != 8 || v[0].len < 8 || (width != 4 && width != 8) ||
        v[2].itemsize != width || v[2].len != v[1].len) {
        PyErr_SetString(PyExc_ValueError,
                        "row_owners: int64 offsets, and rows and out of one integer width");
        goto done;
    }
    const int64_t *start = v[0].buf;
    Py_ssize_t n_start = v[0].len / 8, m = v[1].len / width;
    int64_t base = start[0], n_rows;
    /* offsets of a table's rows: from 0 up (so that r + base below stays in range) */
    if (base < 0 || !sub_ok(start[n_start - 1], base, &n_rows)) {
        PyErr_SetString(PyExc_ValueError, "row_owners: stat offsets out of range");
        goto done;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t r = width == 4 ? ((const int32_t *)v[1].buf)[k] : ((const int64_t *)v[1].buf)[k];
        if (r < 0 || r >= n_rows) {
            PyErr_SetString(PyExc_ValueError, "row_owners: stat row out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t r = width == 4 ? ((const int32_t *)v[1].buf)[k] : ((const int64_t *)v[1].buf)[k];
        p = gallop(start, n_start, r + base, 1, p);
        if (width == 4) ((int32_t *)v[2].buf)[k] = (int32_t)(p - 1);
        else ((int64_t *)v[2].buf)[k] = p - 1;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

PyMethodDef row_methods[] = {
    {"row_owners", row_owners, METH_VARARGS, "The event owning each stat row (see source)."},
    {NULL, NULL, 0, NULL},
};
