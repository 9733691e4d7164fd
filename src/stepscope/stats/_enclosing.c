/*
 * The stack walk of stepscope.stats.enclosing._scan_line, in C (same inputs, same answers;
 * the Python loop stays as the fallback when this module is not built). It runs once per
 * line with launches or allocations to attribute: a Python loop costs about 1 us per event.
 *
 * scan(c_start, c_end, c_id, q_start, q_end, q_id) -> bytes of int64, one per query: the id
 * of the innermost candidate enclosing it, or -1. Candidates sorted by (start, longest
 * first), queries by start; every argument is the bytes of an int64 array.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../_native.h"
#include <stdint.h>
#include <stdlib.h>

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer b[6];
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]))
        return NULL;
    PyObject *out = NULL;
    int64_t *stack_end = NULL, *stack_id = NULL;
    Py_ssize_t n_cand = b[0].len / 8, n_query = b[3].len / 8;
    if (b[1].len / 8 != n_cand || b[2].len / 8 != n_cand || b[4].len / 8 != n_query ||
        b[5].len / 8 != n_query) {
        PyErr_SetString(PyExc_ValueError, "candidate or query columns differ in length");
        goto done;
    }
    stack_end = malloc((size_t)(n_cand ? n_cand : 1) * sizeof(int64_t));
    stack_id = malloc((size_t)(n_cand ? n_cand : 1) * sizeof(int64_t));
    out = PyBytes_FromStringAndSize(NULL, n_query * 8);
    if (!stack_end || !stack_id || !out) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *c_start = b[0].buf, *c_end = b[1].buf, *c_id = b[2].buf;
    const int64_t *q_start = b[3].buf, *q_end = b[4].buf, *q_id = b[5].buf;
    int64_t *result = (int64_t *)PyBytes_AS_STRING(out);
    Py_ssize_t depth = 0, next = 0;
    for (Py_ssize_t i = 0; i < n_query; i++) {
        int64_t qs = q_start[i], qe = q_end[i];
        while (next < n_cand && c_start[next] <= qs) {
            int64_t cs = c_start[next];
            while (depth && stack_end[depth - 1] <= cs && stack_end[depth - 1] < c_end[next])
                depth--;
            stack_end[depth] = c_end[next];
            stack_id[depth] = c_id[next];
            depth++;
            next++;
        }
        while (depth && stack_end[depth - 1] < qs) depth--;
        Py_ssize_t d = depth - 1;
        while (d >= 0 && (stack_end[d] < qe || stack_id[d] == q_id[i])) d--;
        result[i] = d >= 0 ? stack_id[d] : -1;
    }
done:
    free(stack_end);
    free(stack_id);
    for (int i = 0; i < 6; i++) PyBuffer_Release(&b[i]);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Innermost enclosing candidate per query (see above)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_enclosing", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__enclosing(void) { return stamped(PyModule_Create(&module)); }
