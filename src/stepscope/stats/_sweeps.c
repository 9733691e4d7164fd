/* Optional accelerator of two sweeps of the step and op analysis. Each is a single pass in C
 * where the NumPy version needs several passes, sorts or rounds of pointer jumping; the NumPy
 * versions (stats/nesting.py, stats/steps/breakdown.py) give the same results and run when
 * this module is not built. Tests compare both.
 *
 * nest_parents(lines, ends, out): events sorted by (line, start, longest first); out[k] = the
 *   innermost of event k-1 and its ancestors (same line) whose end is at or after k's end,
 *   else -1 (XProf's op stack). A stack per line holds the previous event and its ancestors.
 *
 * step_type_unions(step, lo, hi, types, order, thresholds, out): the intervals [lo, hi) taken
 *   in ``order`` (sorted by (step, lo)), empty ones skipped; for each thresholds[j], the union
 *   length per step of the intervals with types >= it, into out[j * n_steps + step] (out zeroed
 *   by the caller, n_steps = len(out) / len(thresholds)). Intervals of one step that touch or
 *   overlap merge, as in stats/intervals.merge_sorted. step: int32 or int64; types: int16
 *   or int64.
 *
 * window_bounds(events, start, end, reach, win_start, lo, hi): for each k,
 *   lo[k] = searchsorted(reach, start[events[k]], "right") and
 *   hi[k] = searchsorted(win_start, end[events[k]], "left"), as NumPy gives them, without the
 *   gathered copies of start and end; each search gallops from the previous answer, so events
 *   taken in time order (as on one thread) cost O(1) each instead of a binary search.
 *
 * window_pairs_into, merge_runs: see _sweeps_pairs.c.
 *
 * nest_self_time(events, line, start, end, own): the events taken as given, which must be in
 *   (line, start, longest first) order, as traces are written; own[k] = the duration of
 *   events[k] less those of its direct children among them (self time over nest_parents' op
 *   stack), the columns read in place through the indices. Returns False, own spoiled, when
 *   the events are out of that order (the caller sorts). line is int32.
 *
 * union_in_order(lo, hi, order, out_lo, out_hi): the union of the non-empty intervals
 *   [lo, hi) taken in ``order`` (ascending lo), as sorted disjoint runs written to
 *   out_lo/out_hi (at least as long as order); returns how many. Intervals that touch or
 *   overlap merge, as in stats/intervals.merge_sorted; no gathered copies of the columns.
 *
 * sum_by_row(row, values, take, out): out[row[k]] += values[take[k]] for every k (take empty:
 *   values[k]), exact int64 sums read in place through ``take`` (np.bincount would gather the
 *   values and convert them to float64 first: two 8 B/event temporaries per column summed).
 *
 * op_sums(events, line, start, dur, key, eager, count, total, self, eager_self, first, last):
 *   the op table's per-key sums in one pass, with no per-event array: for the events taken as
 *   given, in trace order as for nest_self_time, count[key[e]] += 1, total[key[e]] += dur[e],
 *   self[key[e]] += the event's self time (its duration less its direct children's among
 *   them: added as dur[e] to its own key and taken off its parent's), eager_self the same for
 *   the events whose eager[k] is set (eager empty: none), and per line the first start and
 *   last end (first/last hold the caller's initial values). line and key are int32 columns
 *   read through the indices, eager one byte per event given. Returns False, outputs spoiled,
 *   when the events are out of trace order (the caller goes the NumPy way).
 *
 * stat_sums(events, stat_start, stat_key, stat_kind, stat_value, name, row_of_name, params,
 *   out): out[row_of_name[name[e]]] += the float64 value of stat params[0] on event e, for the
 *   events taken in order, read in place from the event's stat rows (its last row of the key,
 *   as the profile's stat lookups keep): ints and uints (params[1], params[2]) converted from
 *   their int64 bits, doubles (params[3]) with NaN as 0 and infinities as +-DBL_MAX (NumPy's
 *   nan_to_num), other kinds 0. stat_key and name are int32, stat_kind int8, out float64.
 *
 * Every other array is C-contiguous int64; out, own, lo and hi are writable.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_sweeps.h"

static PyObject *nest_self_time(PyObject *self, PyObject *args) {
    Py_buffer v[5];
    if (get_args(args, v, 5, (const Py_ssize_t[]){8, 4, 8, 8, 8}, 4) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t *stack = NULL;
    Py_ssize_t n = v[0].len / 8, n_events = v[1].len / 4;
    if (v[2].len / 8 != n_events || v[3].len / 8 != n_events || v[4].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *events = v[0].buf, *start = v[2].buf, *end = v[3].buf;
    const int32_t *line = v[1].buf;
    int64_t *own = v[4].buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (events[k] < 0 || events[k] >= n_events) {
            PyErr_SetString(PyExc_ValueError, "event index out of range");
            goto done;
        }
    }
    /* as deep as the deepest nesting: the pages past it are never touched */
    stack = PyMem_Malloc((n ? n : 1) * sizeof(Py_ssize_t));
    if (!stack) { PyErr_NoMemory(); goto done; }
    int ordered = 1;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t top = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t e = events[k];
        if (k) {
            int64_t p = events[k - 1];
            if (line[e] != line[p]) {
                if (line[e] < line[p]) { ordered = 0; break; }
                top = 0;
            } else if (start[e] < start[p] || (start[e] == start[p] && end[e] > end[p])) {
                ordered = 0;
                break;
            }
        }
        while (top && end[events[stack[top - 1]]] < end[e]) top--;
        own[k] = end[e] - start[e];
        if (top) own[stack[top - 1]] -= end[e] - start[e];
        stack[top++] = k;
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ordered);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    PyMem_Free(stack);
    return result;
}

static PyObject *union_in_order(PyObject *self, PyObject *args) {
    Py_buffer v[5];
    if (get_args(args, v, 5, NULL, 3) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = v[0].len / 8, m = v[2].len / 8;
    if (v[1].len / 8 != n || v[3].len / 8 < m || v[4].len / 8 < m) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *lo = v[0].buf, *hi = v[1].buf, *order = v[2].buf;
    int64_t *out_lo = v[3].buf, *out_hi = v[4].buf;
    for (Py_ssize_t k = 0; k < m; k++) {
        if (order[k] < 0 || order[k] >= n) {
            PyErr_SetString(PyExc_ValueError, "index out of range");
            goto done;
        }
    }
    Py_ssize_t runs = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < m; k++) {
        int64_t a = lo[order[k]], b = hi[order[k]];
        if (b <= a) continue;
        if (runs && a <= out_hi[runs - 1]) {
            if (b > out_hi[runs - 1]) out_hi[runs - 1] = b;
        } else {
            out_lo[runs] = a;
            out_hi[runs++] = b;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(runs);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    return result;
}

static PyObject *sum_by_row(PyObject *self, PyObject *args) {
    Py_buffer v[4];
    if (get_args(args, v, 4, NULL, 3) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = v[0].len / 8, n_values = v[1].len / 8, n_take = v[2].len / 8,
               n_out = v[3].len / 8;
    if (n_take ? n_take != n : n_values != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *row = v[0].buf, *values = v[1].buf, *take = v[2].buf;
    int64_t *out = v[3].buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (row[k] < 0 || row[k] >= n_out || (n_take && (take[k] < 0 || take[k] >= n_values))) {
            PyErr_SetString(PyExc_ValueError, "index out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    if (n_take)
        for (Py_ssize_t k = 0; k < n; k++) out[row[k]] += values[take[k]];
    else
        for (Py_ssize_t k = 0; k < n; k++) out[row[k]] += values[k];
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    return result;
}

static PyObject *nest_parents(PyObject *self, PyObject *args) {
    Py_buffer v[3];
    if (get_args(args, v, 3, NULL, 2) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t *stack = NULL;
    Py_ssize_t n = v[0].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *lines = v[0].buf, *ends = v[1].buf;
    int64_t *out = v[2].buf;
    stack = PyMem_Malloc((n ? n : 1) * sizeof(Py_ssize_t));
    if (!stack) { PyErr_NoMemory(); goto done; }
    Py_ssize_t top = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n; k++) {
        if (k && lines[k] != lines[k - 1]) top = 0;
        while (top && ends[stack[top - 1]] < ends[k]) top--;
        out[k] = top ? (int64_t)stack[top - 1] : -1;
        stack[top++] = k;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    PyMem_Free(stack);
    return result;
}

static PyObject *step_type_unions(PyObject *self, PyObject *args) {
    Py_buffer v[7];
    if (get_args(args, v, 7, (const Py_ssize_t[]){4, 8, 8, 2, 8, 8, 8}, 6) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = v[1].len / 8, n_thr = v[5].len / 8, n_out = v[6].len / 8;
    if ((v[0].len != 4 * n && v[0].len != 8 * n) || v[2].len / 8 != n || v[4].len / 8 != n ||
        (v[3].len != 2 * n && v[3].len != 8 * n) || (n_thr && n_out % n_thr)) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *lo_ = v[1].buf, *hi_ = v[2].buf, *order = v[4].buf, *thresholds = v[5].buf;
    /* the steps in int32 or int64, the types in int16 (the event types' own width) or int64 */
    const int32_t *step32 = v[0].len == 4 * n ? v[0].buf : NULL;
    const int64_t *step64 = v[0].buf;
#define STEP(i) (step32 ? (int64_t)step32[i] : step64[i])
    const int16_t *types16 = v[3].len == 2 * n ? v[3].buf : NULL;
    const int64_t *types64 = v[3].buf;
    int64_t *out = v[6].buf;
    Py_ssize_t n_steps = n_thr ? n_out / n_thr : 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t i = order[k];
        if (i < 0 || i >= n || STEP(i) < 0 || STEP(i) >= n_steps) {
            PyErr_SetString(PyExc_ValueError, "order or step out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < n_thr; j++) {
        int64_t t = thresholds[j], lo = 0, hi = 0, s = -1;
        int64_t *row = out + j * n_steps;
        for (Py_ssize_t k = 0; k < n; k++) {
            int64_t i = order[k];
            if ((types16 ? types16[i] : types64[i]) < t || hi_[i] <= lo_[i]) continue;
            if (s == STEP(i) && lo_[i] <= hi) {
                if (hi_[i] > hi) hi = hi_[i];
                continue;
            }
            if (s >= 0) row[s] += hi - lo;
            lo = lo_[i];
            hi = hi_[i];
            s = STEP(i);
        }
        if (s >= 0) row[s] += hi - lo;
    }
    Py_END_ALLOW_THREADS
#undef STEP
    result = Py_NewRef(Py_None);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    return result;
}

static PyObject *window_bounds(PyObject *self, PyObject *args) {
    Py_buffer v[7];
    if (get_args(args, v, 7, NULL, 5) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = v[0].len / 8, n_events = v[1].len / 8, m = v[3].len / 8;
    if (v[2].len / 8 != n_events || v[4].len / 8 != m || v[5].len / 8 != n ||
        v[6].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *events = v[0].buf, *start = v[1].buf, *end = v[2].buf, *reach = v[3].buf,
                  *win_start = v[4].buf;
    int64_t *lo = v[5].buf, *hi = v[6].buf;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (events[k] < 0 || events[k] >= n_events) {
            PyErr_SetString(PyExc_ValueError, "event index out of range");
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p_lo = 0, p_hi = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t e = events[k];
        lo[k] = p_lo = gallop(reach, m, start[e], 1, p_lo);
        hi[k] = p_hi = gallop(win_start, m, end[e], 0, p_hi);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    return result;
}

static PyObject *op_sums(PyObject *self, PyObject *args) {
    Py_buffer v[12];
    static const Py_ssize_t sizes[12] = {8, 4, 8, 8, 4, 1, 8, 8, 8, 8, 8, 8};
    if (get_args(args, v, 12, sizes, 6) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t *stack = NULL;
    Py_ssize_t n = v[0].len / 8, n_events = v[1].len / 4, n_keys = v[6].len / 8,
               n_lines = v[10].len / 8;
    int with_eager = v[5].len != 0;
    if (v[2].len / 8 != n_events || v[3].len / 8 != n_events || v[4].len / 4 != n_events ||
        (with_eager && v[5].len != n) || v[7].len / 8 != n_keys || v[8].len / 8 != n_keys ||
        v[9].len / 8 != n_keys || v[11].len / 8 != n_lines) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *events = v[0].buf, *start = v[2].buf, *dur = v[3].buf;
    const int32_t *line = v[1].buf, *key = v[4].buf;
    const uint8_t *eager = v[5].buf;
    int64_t *count = v[6].buf, *total = v[7].buf, *own = v[8].buf, *eager_own = v[9].buf,
            *first = v[10].buf, *last = v[11].buf;
    /* as deep as the deepest nesting: the pages past it are never touched */
    stack = PyMem_Malloc((n ? n : 1) * sizeof(Py_ssize_t));
    if (!stack) { PyErr_NoMemory(); goto done; }
    int ordered = 1, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t top = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t e = events[k];
        if (e < 0 || e >= n_events || line[e] < 0 || line[e] >= n_lines || key[e] < 0 ||
            key[e] >= n_keys) {
            bad = 1;
            break;
        }
        int64_t s = start[e], d = dur[e], end = s + d;
        if (k) {
            int64_t p = events[k - 1];
            if (line[e] != line[p]) {
                if (line[e] < line[p]) { ordered = 0; break; }
                top = 0;
            } else if (s < start[p] || (s == start[p] && end > start[p] + dur[p])) {
                ordered = 0;
                break;
            }
        }
        while (top) {
            int64_t q = events[stack[top - 1]];
            if (start[q] + dur[q] >= end) break;
            top--;
        }
        int32_t kk = key[e];
        count[kk] += 1;
        total[kk] += d;
        own[kk] += d;
        if (with_eager && eager[k]) eager_own[kk] += d;
        if (top) {
            Py_ssize_t parent = stack[top - 1];
            int32_t pk = key[events[parent]];
            own[pk] -= d;
            if (with_eager && eager[parent]) eager_own[pk] -= d;
        }
        stack[top++] = k;
        if (s < first[line[e]]) first[line[e]] = s;
        if (end > last[line[e]]) last[line[e]] = end;
    }
    Py_END_ALLOW_THREADS
    if (bad) PyErr_SetString(PyExc_ValueError, "event, line or key index out of range");
    else result = PyBool_FromLong(ordered);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    PyMem_Free(stack);
    return result;
}

static PyObject *stat_sums(PyObject *self, PyObject *args) {
    Py_buffer v[9];
    static const Py_ssize_t sizes[9] = {8, 8, 4, 1, 8, 4, 8, 8, 8};
    if (get_args(args, v, 9, sizes, 8) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = v[0].len / 8, n_events = v[5].len / 4, n_rows = v[2].len / 4,
               n_names = v[6].len / 8, n_out = v[8].len / 8;
    if (v[1].len / 8 != n_events + 1 || v[3].len != n_rows || v[4].len / 8 != n_rows ||
        v[7].len / 8 != 4) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *events = v[0].buf, *start = v[1].buf, *value = v[4].buf,
                  *row_of_name = v[6].buf, *params = v[7].buf;
    const int32_t *key = v[2].buf, *name = v[5].buf;
    const int8_t *kind = v[3].buf;
    double *out = v[8].buf;
    int64_t want = params[0], k_int = params[1], k_uint = params[2], k_double = params[3];
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t base = n_events ? start[0] : 0;
    for (Py_ssize_t k = 0; k < n && !bad; k++) {
        int64_t e = events[k];
        if (e < 0 || e >= n_events) { bad = 1; break; }
        int64_t lo = start[e] - base, hi = start[e + 1] - base, found = -1;
        if (lo < 0 || hi > n_rows || lo > hi) { bad = 1; break; }
        for (int64_t r = lo; r < hi; r++)
            if (key[r] == want) found = r;
        if (found < 0) continue;
        int32_t nm = name[e];
        if (nm < 0 || nm >= n_names || row_of_name[nm] < 0 || row_of_name[nm] >= n_out) {
            bad = 1;
            break;
        }
        double x = 0.0;
        if (kind[found] == k_int || kind[found] == k_uint) {
            x = (double)value[found];
        } else if (kind[found] == k_double) {
            memcpy(&x, &value[found], sizeof x);
            if (isnan(x)) x = 0.0;
            else if (isinf(x)) x = x > 0 ? DBL_MAX : -DBL_MAX;
        }
        out[row_of_name[nm]] += x;
    }
    Py_END_ALLOW_THREADS
    if (bad) PyErr_SetString(PyExc_ValueError, "event, stat row or name index out of range");
    else result = Py_NewRef(Py_None);
done:
    release(v, (int)(sizeof v / sizeof v[0]));
    return result;
}

/* hold_walk(step, ns, type, next, out_step, out_lo, out_hi, out_type) -> spans: sweep._hold's
 * walk of the uncovered zero-length events, given in walk order (int64 columns); the held
 * spans (step, lo, hi, type) are written to the outputs (room for one per event). */
static PyObject *hold_walk(PyObject *self, PyObject *args) {
    Py_buffer v[8];
    if (get_args(args, v, 8, NULL, 4) < 0) return NULL;
    Py_ssize_t m = v[0].len / 8, n = 0;
    for (int k = 1; k < 8; k++) {
        if (v[k].len / 8 != m) {
            PyErr_SetString(PyExc_ValueError, "columns differ in length");
            release(v, 8);
            return NULL;
        }
    }
    const int64_t *step = v[0].buf, *ns = v[1].buf, *type = v[2].buf, *next = v[3].buf;
    int64_t *o_step = v[4].buf, *o_lo = v[5].buf, *o_hi = v[6].buf, *o_type = v[7].buf;
    int64_t c_step = 0, c_type = 0, c_start = 0, c_clear = 0;  /* the current held type */
    for (Py_ssize_t k = 0; k < m; k++) {
        if (k && c_step == step[k] && ns[k] < c_clear) {
            if (type[k] <= c_type) continue;  /* a held type at least as high stays current */
            o_step[n] = c_step, o_lo[n] = c_start, o_hi[n] = ns[k], o_type[n++] = c_type;
        } else if (k) {
            o_step[n] = c_step, o_lo[n] = c_start, o_hi[n] = c_clear, o_type[n++] = c_type;
        }
        c_step = step[k], c_type = type[k], c_start = ns[k], c_clear = next[k];
    }
    if (m) o_step[n] = c_step, o_lo[n] = c_start, o_hi[n] = c_clear, o_type[n++] = c_type;
    release(v, 8);
    return PyLong_FromSsize_t(n);
}

static PyMethodDef methods[] = {
    {"window_bounds", window_bounds, METH_VARARGS,
     "Window index range each event overlaps (two searchsorted, galloping from the last)."},
    {"step_type_unions", step_type_unions, METH_VARARGS,
     "Per type threshold and step, the union length of (step, lo, hi) intervals."},
    {"nest_parents", nest_parents, METH_VARARGS, "Op-stack parents of sorted events."},
    {"hold_walk", hold_walk, METH_VARARGS, "Held spans of zero-length events (sweep._hold)."},
    {"sum_by_row", sum_by_row, METH_VARARGS,
     "Exact int64 sums of values (through take) per row, added into out."},
    {"union_in_order", union_in_order, METH_VARARGS,
     "Union of intervals taken in start order, as disjoint runs; returns their count."},
    {"nest_self_time", nest_self_time, METH_VARARGS,
     "Self time of events in trace order through their indices; False when out of order."},
    {"op_sums", op_sums, METH_VARARGS,
     "Per-key count, total, self and eager self time of events in trace order, and each "
     "line's first start and last end, in one pass; False when out of order."},
    {"stat_sums", stat_sums, METH_VARARGS,
     "Float64 sums of one stat per row of the events' names, read in place from their rows."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sweeps", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sweeps(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddFunctions(m, pair_methods) < 0) Py_CLEAR(m); /* _sweeps_pairs.c */
    return stamped(m);
}
