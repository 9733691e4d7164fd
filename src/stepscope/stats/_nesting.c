/* The nesting of events on their lines in one pass: each event's parent and depth
 * (stats/nesting.py is the NumPy twin and says what a parent is).
 *
 * parents(line, start, end, parent, depth) -> bool
 *   line int32, start and end int64, parent and depth int64 and writable, all of one length.
 *   When the events are in (line, start, longest first) order -- line ascending, then start
 *   ascending, then end descending -- writes each one's parent (its position, -1 for none)
 *   and depth (its ancestors' count) and returns True; returns False at the first event out
 *   of that order (the outputs are then partly written: the caller sorts and calls again).
 *
 * The parent of event k is the innermost of event k-1 and its ancestors whose end is at or
 * after k's (XProf's op stack): a stack of the open events, popped while its top ends
 * before k, is that chain. Each event is pushed and popped at most once: O(n), against the
 * NumPy twin's sorts, searches and pointer-jumping rounds (27 ms of 0.27 s of a first
 * `stepscope tool` command at 266k events; 0.4-0.6 s at 5.3M).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "../_native.h"

/* 1: done; 0: out of order; -1: no memory for the stack. */
static int nest(const int32_t *line, const int64_t *start, const int64_t *end, int64_t *parent,
                int64_t *depth, Py_ssize_t n) {
    Py_ssize_t cap = 256, top = 0;
    Py_ssize_t *stack = malloc((size_t)cap * sizeof(Py_ssize_t));
    if (!stack) return -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (k == 0 || line[k] != line[k - 1]) {
            if (k && line[k] < line[k - 1]) goto out_of_order;
            top = 0;
        } else if (start[k] < start[k - 1] || (start[k] == start[k - 1] && end[k] > end[k - 1])) {
            goto out_of_order;
        }
        int64_t e = end[k];
        while (top && end[stack[top - 1]] < e) top--;
        parent[k] = top ? (int64_t)stack[top - 1] : -1;
        depth[k] = (int64_t)top;
        if (top == cap) {
            Py_ssize_t *grown = realloc(stack, (size_t)cap * 2 * sizeof(Py_ssize_t));
            if (!grown) {
                free(stack);
                return -1;
            }
            stack = grown;
            cap *= 2;
        }
        stack[top++] = k;
    }
    free(stack);
    return 1;
out_of_order:
    free(stack);
    return 0;
}

static PyObject *parents(PyObject *self, PyObject *args) {
    PyObject *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4]))
        return NULL;
    static const char *names[5] = {"line", "start", "end", "parent", "depth"};
    Py_buffer v[5];
    int held = 0;
    PyObject *result = NULL;
    for (; held < 5; held++) {
        Py_ssize_t itemsize = held == 0 ? 4 : 8;
        if (native_array(objs[held], &v[held], itemsize, held >= 3, names[held]) < 0) goto done;
    }
    Py_ssize_t n = v[0].len / 4;
    for (int k = 1; k < 5; k++) {
        if (v[k].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "parents: arrays of one length expected");
            goto done;
        }
    }
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = nest(v[0].buf, v[1].buf, v[2].buf, v[3].buf, v[4].buf, n);
    Py_END_ALLOW_THREADS
    if (found < 0) PyErr_NoMemory();
    else result = PyBool_FromLong(found);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* push_down_min(index, parent, values) -> bool
 *   index and parent int64 of one length, values int64 and writable: for k in order,
 *   values[index[k]] = min(values[index[k]], values[index[parent[k]]]) where parent[k] >= 0,
 *   so that each value becomes the minimum over itself and its ancestors. Returns False
 *   (nothing written) unless every parent comes before its child (parent[k] < k: events
 *   nested in their sorted order); an index outside values or a parent below -1 is a
 *   ValueError. One pass, where the NumPy twin gathers and scatters the values level by
 *   level (each round of the step groups' label propagation, 3 rounds at 5.3M events). */
static PyObject *push_down_min(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    if (!PyArg_ParseTuple(args, "OOO", &objs[0], &objs[1], &objs[2])) return NULL;
    static const char *names[3] = {"index", "parent", "values"};
    Py_buffer v[3];
    int held = 0;
    PyObject *result = NULL;
    for (; held < 3; held++)
        if (native_array(objs[held], &v[held], 8, held == 2, names[held]) < 0) goto done;
    Py_ssize_t n = v[0].len / 8, m = v[2].len / 8;
    if (v[1].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "push_down_min: index and parent of one length");
        goto done;
    }
    const int64_t *index = v[0].buf, *parent = v[1].buf;
    int64_t *values = v[2].buf;
    int ordered = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (index[k] < 0 || index[k] >= m || parent[k] < -1) {
            PyErr_SetString(PyExc_ValueError, "push_down_min: index or parent out of range");
            goto done;
        }
        if (parent[k] >= k) ordered = 0;
    }
    if (ordered) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < n; k++) {
            if (parent[k] < 0) continue;
            int64_t up = values[index[parent[k]]];
            if (up < values[index[k]]) values[index[k]] = up;
        }
        Py_END_ALLOW_THREADS
    }
    result = PyBool_FromLong(ordered);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* type_unions(key_lo, key_hi, step, types, thresholds, out) -> bool
 *   key_lo, key_hi, step, types: int64 of one length, the intervals sorted by key_lo
 *   ascending; thresholds: int64 (T); out: float64, writable, T * n_steps long, zeroed.
 *   For each threshold t = thresholds[j], the union of the intervals whose type is t or
 *   higher, as runs: a run starts at an interval that starts after every earlier interval
 *   of the subset has ended, and ends at the furthest end of its intervals; each run's
 *   length is added (as a double, in the order the runs start) to out[j * n_steps + s],
 *   s the step of its first interval. That is stats/steps/type_sweep.py's NumPy twin
 *   (`merge_sorted` per threshold, then `np.bincount` with the lengths as weights), in one
 *   pass for every threshold at once, where the twin gathers and scans the intervals once
 *   per threshold (2.5-9 ms of a 0.2M-event overview, decision 443). Returns False
 *   (nothing written) when key_lo is not ascending; a step outside out's rows, mismatched
 *   lengths or a run longer than int64 is a ValueError. */
static PyObject *type_unions(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5]))
        return NULL;
    static const char *names[6] = {"key_lo", "key_hi", "step", "types", "thresholds", "out"};
    Py_buffer v[6];
    int held = 0;
    PyObject *result = NULL;
    int64_t *reach = NULL, *run_lo = NULL, *run_step = NULL;
    for (; held < 6; held++)
        if (native_array(objs[held], &v[held], 8, held == 5, names[held]) < 0) goto done;
    Py_ssize_t n = v[0].len / 8, n_thresholds = v[4].len / 8, n_out = v[5].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n || v[3].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "type_unions: intervals of one length expected");
        goto done;
    }
    if (n_thresholds == 0 || n_out % n_thresholds) {
        PyErr_SetString(PyExc_ValueError, "type_unions: out must be thresholds x steps");
        goto done;
    }
    Py_ssize_t n_steps = n_out / n_thresholds;
    const int64_t *lo = v[0].buf, *hi = v[1].buf, *step = v[2].buf, *type = v[3].buf;
    const int64_t *threshold = v[4].buf;
    double *out = v[5].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (step[i] < 0 || step[i] >= n_steps) {
            PyErr_SetString(PyExc_ValueError, "type_unions: a step outside out's rows");
            goto done;
        }
        if (i && lo[i] < lo[i - 1]) {
            result = Py_NewRef(Py_False);
            goto done;
        }
    }
    reach = malloc((size_t)n_thresholds * sizeof(int64_t));
    run_lo = malloc((size_t)n_thresholds * sizeof(int64_t));
    run_step = malloc((size_t)n_thresholds * sizeof(int64_t));
    if (!reach || !run_lo || !run_step) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_thresholds; j++) run_step[j] = -1;  /* no run open */
    int overflow = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !overflow; i++) {
        for (Py_ssize_t j = 0; j < n_thresholds; j++) {
            if (type[i] < threshold[j]) continue;
            if (run_step[j] >= 0 && lo[i] <= reach[j]) {  /* inside the open run */
                if (hi[i] > reach[j]) reach[j] = hi[i];
                continue;
            }
            if (run_step[j] >= 0) {  /* the open run ends before this interval */
                int64_t length;
                if (!sub_ok(reach[j], run_lo[j], &length)) { overflow = 1; break; }
                out[j * n_steps + run_step[j]] += (double)length;
            }
            run_lo[j] = lo[i];
            reach[j] = hi[i];
            run_step[j] = step[i];
        }
    }
    for (Py_ssize_t j = 0; j < n_thresholds && !overflow; j++) {
        if (run_step[j] < 0) continue;
        int64_t length;
        if (!sub_ok(reach[j], run_lo[j], &length)) { overflow = 1; break; }
        out[j * n_steps + run_step[j]] += (double)length;
    }
    Py_END_ALLOW_THREADS
    if (overflow) PyErr_SetString(PyExc_ValueError, "type_unions: a run longer than int64");
    else result = Py_NewRef(Py_True);
done:
    free(reach);
    free(run_lo);
    free(run_step);
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"parents", parents, METH_VARARGS, "Parents and depths of sorted events (see source)."},
    {"push_down_min", push_down_min, METH_VARARGS, "Minimum over ancestors (see source)."},
    {"type_unions", type_unions, METH_VARARGS, "Union per type threshold and step (see source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_nesting", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__nesting(void) { return stamped(PyModule_Create(&module)); }
