/* The step attribution's (event, step) pairs and the covered time's runs, part of _sweeps
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
 *
 * step_type_unions_in_runs(step, lo, hi, types, thresholds, out): step_type_unions (_sweeps.c)
 *   without ``order``: the pairs' ascending stretches of (step, lo) are found (the attribution
 *   lists each thread's events in time order, so there are about as many as threads) and
 *   merged as they are read, by a heap of the stretches' next pairs with ties to the earlier
 *   stretch (the stable sort's order). No sort key, order or sort buffer: 20 B per pair at
 *   the breakdown's peak. Returns False, out untouched, past MAX_RUNS stretches (the caller
 *   sorts). step int32 or int64, types int16 or int64, the rest int64.
 *
 * union_in_runs(lo, hi): the union of the non-empty intervals [lo, hi) as bytes of (lo, hi)
 *   int64 pairs, sorted and disjoint (stats/intervals.union_in_order's runs), the intervals'
 *   ascending stretches of lo merged as read as above; None past MAX_RUNS stretches (the
 *   caller sorts). Intervals that touch or overlap merge.
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

#define MAX_RUNS 4096

typedef struct {
    const int32_t *step32;
    const int64_t *step64, *lo;
    Py_ssize_t *at; /* each stretch's next pair */
} Heads;

static inline int64_t step_at(const Heads *h, Py_ssize_t i) {
    return h->step32 ? (int64_t)h->step32[i] : h->step64 ? h->step64[i] : 0;
}

/* Whether pair i comes before pair k in (step, lo) order (lo order without steps). */
static inline int pair_before(const Heads *h, Py_ssize_t i, Py_ssize_t k) {
    int64_t a = step_at(h, i), b = step_at(h, k);
    return a < b || (a == b && h->lo[i] < h->lo[k]);
}

/* Whether stretch a's next pair is taken before stretch b's (ties: the earlier stretch). */
static inline int run_before(const Heads *h, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t i = h->at[a], k = h->at[b];
    return pair_before(h, i, k) || (!pair_before(h, k, i) && a < b);
}

static void sift_down(const Heads *h, Py_ssize_t *heap, Py_ssize_t size, Py_ssize_t p) {
    for (;;) {
        Py_ssize_t c = 2 * p + 1;
        if (c >= size) return;
        if (c + 1 < size && run_before(h, heap[c + 1], heap[c])) c++;
        if (!run_before(h, heap[c], heap[p])) return;
        Py_ssize_t t = heap[c];
        heap[c] = heap[p];
        heap[p] = t;
        p = c;
    }
}

/* The ascending stretches of pairs [0, n): at[r] and end[r] bound stretch r; heap holds
 * them all, heap-ordered by their first pairs. Their count, or -1 past MAX_RUNS. */
static Py_ssize_t stretches(Heads *h, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *end,
                            Py_ssize_t *heap) {
    Py_ssize_t runs = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (k && !pair_before(h, k, k - 1)) continue;
        if (runs == MAX_RUNS) return -1;
        if (runs) end[runs - 1] = k;
        at[runs++] = k;
    }
    if (runs) end[runs - 1] = n;
    for (Py_ssize_t r = 0; r < runs; r++) heap[r] = r;
    for (Py_ssize_t p = runs / 2 - 1; p >= 0; p--) sift_down(h, heap, runs, p);
    return runs;
}

/* The next pair in merged order, taken off the heap of *size stretches. */
static inline Py_ssize_t next_pair(Heads *h, const Py_ssize_t *end, Py_ssize_t *heap,
                                   Py_ssize_t *size) {
    Py_ssize_t r = heap[0], i = h->at[r]++;
    if (h->at[r] == end[r]) heap[0] = heap[--*size];
    sift_down(h, heap, *size, 0);
    return i;
}

static PyObject *step_type_unions_in_runs(PyObject *self, PyObject *args) {
    Py_buffer v[6];
    if (get_args(args, v, 6, (const Py_ssize_t[]){4, 8, 8, 2, 8, 8}, 5) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t *at = NULL, *end = NULL, *heap = NULL;
    int64_t *state = NULL;
    Py_ssize_t n = v[1].len / 8, n_thr = v[4].len / 8, n_out = v[5].len / 8;
    if ((v[0].len != 4 * n && v[0].len != 8 * n) || v[2].len / 8 != n ||
        (v[3].len != 2 * n && v[3].len != 8 * n) || (n_thr && n_out % n_thr)) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    Heads h = {v[0].len == 4 * n ? v[0].buf : NULL, v[0].buf, v[1].buf, NULL};
    const int64_t *lo_ = v[1].buf, *hi_ = v[2].buf, *thresholds = v[4].buf;
    const int16_t *types16 = v[3].len == 2 * n ? v[3].buf : NULL;
    const int64_t *types64 = v[3].buf;
    int64_t *out = v[5].buf;
    Py_ssize_t n_steps = n_thr ? n_out / n_thr : 0, n_runs = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (step_at(&h, k) < 0 || step_at(&h, k) >= n_steps) {
            PyErr_SetString(PyExc_ValueError, "step out of range");
            goto done;
        }
    }
    at = PyMem_Malloc(MAX_RUNS * sizeof(Py_ssize_t));
    end = PyMem_Malloc(MAX_RUNS * sizeof(Py_ssize_t));
    heap = PyMem_Malloc(MAX_RUNS * sizeof(Py_ssize_t));
    state = PyMem_Malloc((size_t)(3 * n_thr + 1) * sizeof(int64_t));
    if (!at || !end || !heap || !state) {
        PyErr_NoMemory();
        goto done;
    }
    h.at = at;
    n_runs = stretches(&h, n, at, end, heap);
    if (n_runs < 0) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < n_thr; j++) { /* per threshold: the open run's lo, hi, step */
        state[3 * j + 2] = -1;
    }
    Py_ssize_t size = n_runs;
    while (size) {
        Py_ssize_t i = next_pair(&h, end, heap, &size);
        int64_t a = lo_[i], b = hi_[i], s = step_at(&h, i), type;
        if (b <= a) continue;
        type = types16 ? types16[i] : types64[i];
        for (Py_ssize_t j = 0; j < n_thr; j++) {
            int64_t *run = state + 3 * j;
            if (type < thresholds[j]) continue;
            if (run[2] == s && a <= run[1]) {
                if (b > run[1]) run[1] = b;
                continue;
            }
            if (run[2] >= 0) out[j * n_steps + run[2]] += run[1] - run[0];
            run[0] = a;
            run[1] = b;
            run[2] = s;
        }
    }
    for (Py_ssize_t j = 0; j < n_thr; j++) {
        int64_t *run = state + 3 * j;
        if (run[2] >= 0) out[j * n_steps + run[2]] += run[1] - run[0];
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_True);
done:
    release(v, 6);
    PyMem_Free(at);
    PyMem_Free(end);
    PyMem_Free(heap);
    PyMem_Free(state);
    return result;
}

static PyObject *union_in_runs(PyObject *self, PyObject *args) {
    Py_buffer v[2];
    if (get_args(args, v, 2, NULL, 2) < 0) return NULL;
    PyObject *result = NULL;
    Py_ssize_t *at = NULL, *end = NULL, *heap = NULL, n = v[0].len / 8, n_runs, runs = 0;
    int64_t *out = NULL;
    if (v[1].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *lo_ = v[0].buf, *hi_ = v[1].buf;
    Heads h = {NULL, NULL, lo_, NULL};
    Py_ssize_t cap = 1024;
    at = PyMem_Malloc(MAX_RUNS * sizeof(Py_ssize_t));
    end = PyMem_Malloc(MAX_RUNS * sizeof(Py_ssize_t));
    heap = PyMem_Malloc(MAX_RUNS * sizeof(Py_ssize_t));
    out = PyMem_RawMalloc((size_t)cap * 2 * sizeof(int64_t));
    if (!at || !end || !heap || !out) {
        PyErr_NoMemory();
        goto done;
    }
    h.at = at;
    n_runs = stretches(&h, n, at, end, heap);
    if (n_runs < 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t size = n_runs;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (size) {
        Py_ssize_t i = next_pair(&h, end, heap, &size);
        int64_t a = lo_[i], b = hi_[i];
        if (b <= a) continue;
        if (runs && a <= out[2 * runs - 1]) {
            if (b > out[2 * runs - 1]) out[2 * runs - 1] = b;
            continue;
        }
        if (runs == cap) { /* PyMem_RawRealloc: no GIL needed */
            int64_t *grown = PyMem_RawRealloc(out, (size_t)cap * 4 * sizeof(int64_t));
            if (!grown) {
                failed = 1;
                break;
            }
            out = grown;
            cap *= 2;
        }
        out[2 * runs] = a;
        out[2 * runs++ + 1] = b;
    }
    Py_END_ALLOW_THREADS
    if (failed) PyErr_NoMemory();
    else result = PyBytes_FromStringAndSize((const char *)out, runs * 2 * sizeof(int64_t));
done:
    release(v, 2);
    PyMem_Free(at);
    PyMem_Free(end);
    PyMem_Free(heap);
    PyMem_RawFree(out);
    return result;
}

PyMethodDef pair_methods[] = {
    {"window_pairs_into", window_pairs_into, METH_VARARGS,
     "(event, step) pairs written where asked when no event overlaps two windows, else -1."},
    {"step_type_unions_in_runs", step_type_unions_in_runs, METH_VARARGS,
     "step_type_unions over the pairs' ascending stretches merged as read; False past "
     "MAX_RUNS stretches."},
    {"union_in_runs", union_in_runs, METH_VARARGS,
     "Union of intervals in a few ascending stretches, as bytes of (lo, hi) runs; None past "
     "MAX_RUNS stretches."},
    {NULL, NULL, 0, NULL},
};
