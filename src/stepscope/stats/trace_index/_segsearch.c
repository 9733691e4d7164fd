/*
 * stepscope.stats.trace_index.segments.segmented_search in C (same answers; the NumPy
 * bisection stays as the fallback and the reference). A window query searches a few hundred
 * short sorted segments per host; the vectorized bisection pays NumPy's per-call overhead
 * about 20 times per search (one round per halving), a third of a coarse multi-host window.
 *
 * search(values, lo, hi, keys, right) -> bytes of int64: for each k, the insertion point of
 * keys[k] in values[lo[k]:hi[k]] (sorted), as an absolute position; right != 0 searches
 * like side="right". values, lo, hi and keys are int64 buffers (lo, hi, keys of one length).
 *
 * levels(row, start_rel, dur) -> bytes of int8: lod.detail_levels in one pass per direction
 * (a monotonic stack finds each event's nearest beating event before and after it in its
 * row, where the NumPy version jumps pointers in O(log n) rounds over every event). Same
 * answers as the NumPy version (the reference, tested equal); the GIL is released meanwhile.
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

#define MAX_LEVEL 62

static inline int bit_length(int64_t x) { return x > 0 ? 64 - __builtin_clzll((uint64_t)x) : 0; }

static void detail_levels(const int64_t *row, const int64_t *start, const int64_t *dur,
                          Py_ssize_t n, int64_t *stack, int8_t *limit) {
    Py_ssize_t sp = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* nearest earlier event at least as long */
        if (i > 0 && row[i] != row[i - 1]) sp = 0;
        while (sp > 0 && dur[stack[sp - 1]] < dur[i]) sp--;
        int lim = MAX_LEVEL + 1;
        if (sp > 0) {
            int shared = bit_length(start[i] ^ start[stack[sp - 1]]);
            if (shared < lim) lim = shared;
        }
        limit[i] = (int8_t)lim;
        stack[sp++] = i;
    }
    sp = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) { /* nearest later event strictly longer */
        if (i < n - 1 && row[i] != row[i + 1]) sp = 0;
        while (sp > 0 && dur[stack[sp - 1]] <= dur[i]) sp--;
        int lim = limit[i];
        if (sp > 0) {
            int shared = bit_length(start[i] ^ start[stack[sp - 1]]);
            if (shared < lim) lim = shared;
        }
        int level = lim - 1 < 0 ? 0 : (lim - 1 > MAX_LEVEL ? MAX_LEVEL : lim - 1);
        int by_duration = bit_length(dur[i]) - 1; /* an event a bin long is always shown */
        if (by_duration > MAX_LEVEL) by_duration = MAX_LEVEL;
        limit[i] = (int8_t)(level > by_duration ? level : by_duration);
        stack[sp++] = i;
    }
}

static PyObject *levels(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    if (!PyArg_ParseTuple(args, "y*y*y*", &b[0], &b[1], &b[2])) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = b[0].len / 8;
    if (b[1].len / 8 != n || b[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "row, start and dur differ in length");
        goto done;
    }
    int64_t *stack = PyMem_RawMalloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!stack) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n);
    if (out) {
        int8_t *level = (int8_t *)PyBytes_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS
        detail_levels(b[0].buf, b[1].buf, b[2].buf, n, stack, level);
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(stack);
done:
    for (int i = 0; i < 3; i++) PyBuffer_Release(&b[i]);
    return out;
}

static PyMethodDef methods[] = {
    {"search", search, METH_VARARGS, "Insertion points of keys in sorted segments (int64)."},
    {"levels", levels, METH_VARARGS, "Level of detail of events sorted by (row, start) (int8)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_segsearch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__segsearch(void) { return PyModule_Create(&module); }
