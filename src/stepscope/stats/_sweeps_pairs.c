/* The step attribution's (event, step) pairs, part of _sweeps
 * (see _sweeps.c for the module and the NumPy versions' places).
 *
 * window_pairs_into(events, start, dur, reach, win_start, step_of_window, ev_out, st_out):
 *   the usual case of window_bounds (_sweeps.c), each event overlapping at most one window:
 *   the events that overlap one, compacted as (ev_out[i], st_out[i]) = (event,
 *   step_of_window[window]) for i < the count returned; -1 (outputs spoiled) as soon as an
 *   event overlaps two windows (the caller then takes the bounds). Ends are summed from
 *   start + dur as read (no column of end times). ev_out may be ``events`` itself (a pair is
 *   written no later than its event is read). step_of_window and st_out are int32, the rest
 *   int64.

 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_sweeps.h"

static PyObject *window_pairs_into(PyObject *self, PyObject *args) {
    static const Py_ssize_t sizes[8] = {8, 8, 8, 8, 8, 4, 8, 4};
    Py_buffer v[8];
    if (get_args(args, v, 8, sizes, 6) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = v[0].len / 8, n_events = v[1].len / 8, m = v[3].len / 8;
    if (v[2].len / 8 != n_events || v[4].len / 8 != m || v[5].len / 4 != m ||
        v[6].len / 8 != n || v[7].len / 4 != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *events = v[0].buf, *start = v[1].buf, *dur = v[2].buf, *reach = v[3].buf,
                  *win_start = v[4].buf;
    const int32_t *step_of_window = v[5].buf;
    int64_t *ev_out = v[6].buf;
    int32_t *st_out = v[7].buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (events[k] < 0 || events[k] >= n_events) {
            PyErr_SetString(PyExc_ValueError, "event index out of range");
            goto done;
        }
    }
    Py_ssize_t found = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p_lo = 0, p_hi = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t e = events[k];
        p_lo = gallop(reach, m, start[e], 1, p_lo);
        p_hi = gallop(win_start, m, start[e] + dur[e], 0, p_hi);
        if (p_hi - p_lo == 1) { /* found <= k: events not yet read are untouched */
            ev_out[found] = e;
            st_out[found++] = step_of_window[p_lo];
        } else if (p_hi - p_lo > 1) {
            found = -1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(found);
done:
    release(v, 8);
    return result;
}

PyMethodDef pair_methods[] = {
    {"window_pairs_into", window_pairs_into, METH_VARARGS,
     "(event, step) pairs written where asked when no event overlaps two windows, else -1."},
    {NULL, NULL, 0, NULL},
};
