/*
 * stepscope.stats.trace_index.segments.segmented_search in C (same answers; the NumPy
 * bisection stays as the fallback and the reference). A window query searches a few hundred
 * short sorted segments per host; the vectorized bisection pays NumPy's per-call overhead
 * about 20 times per search (one round per halving), a third of a coarse multi-host window.
 *
 * search(values, lo, hi, keys, right) -> bytes of int64: for each k, the insertion point of
 * keys[k] in values[lo[k]:hi[k]] (sorted), as an absolute position; right != 0 searches
 * like side="right". values, lo, hi and keys are int64 buffers (lo, hi, keys of one length).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *search(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    int right;
    if (!PyArg_ParseTuple(args, "y*y*y*y*p", &b[0], &b[1], &b[2], &b[3], &right)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n_values = b[0].len / 8, n = b[1].len / 8;
    if (b[2].len / 8 != n || b[3].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "lo, hi and keys differ in length");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!out) goto done;
    const int64_t *values = b[0].buf, *lo = b[1].buf, *hi = b[2].buf, *keys = b[3].buf;
    int64_t *result = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t a = lo[k], z = hi[k], key = keys[k];
        if (a < 0 || z > n_values) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_IndexError, "segment outside the values");
            goto done;
        }
        while (a < z) {
            int64_t mid = a + ((z - a) >> 1);
            int go_right = right ? values[mid] <= key : values[mid] < key;
            if (go_right)
                a = mid + 1;
            else
                z = mid;
        }
        result[k] = a;
    }
done:
    for (int i = 0; i < 4; i++) PyBuffer_Release(&b[i]);
    return out;
}

static PyMethodDef methods[] = {
    {"search", search, METH_VARARGS, "Insertion points of keys in sorted segments (int64)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_segsearch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__segsearch(void) { return PyModule_Create(&module); }
