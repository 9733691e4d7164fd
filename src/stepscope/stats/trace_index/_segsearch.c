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
 *
 * layout(order0, line, depth, start, dur, n_lines, origin, order, pos_start, end_max,
 * line_depths[, threads]) -> (seg_row bytes of int32, seg_level bytes of int8, seg_lo bytes
 * of int64):
 * the trace index's positions (index._build's NumPy path, the reference) by two stable
 * counting sorts, by row (line, depth) and then by level within each row, writing each
 * position's event, start and running end maximum in place: the NumPy path sorts and
 * gathers full-size columns about ten times (a second at 10M events). order0 is
 * lod.line_order's (int64), line and depth int32, start and dur int64; order (int32 or
 * int64), pos_start and end_max (int64, one per event) and line_depths (int32, one per line)
 * are filled in; an empty order0 stands for events already in line order (0, 1, ...). The
 * rows' levels and positions are shared among ``threads`` workers (the same index with any
 * count).
 *
 * depths(line, start, dur) -> (bytes of int32, first start, last end) or None: lod's nesting
 * depth in one pass with a stack of the running events, for events already in line order
 * (each line's events contiguous, by start, longer first on ties: lod.line_order's identity
 * case, the usual one); None when they are not (the caller sorts them). The stack after event
 * i-1 is its chain of parents, the chain lod's pointer jumping walks for event i, so the
 * depths are the same.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../_native.h"
#include <stdint.h>
#include <stdlib.h>
#ifndef _WIN32
#include <pthread.h>
#endif

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

/* The levels of positions a..b-1, one row: event ev[p] (p itself when ev is NULL), starts
 * relative to origin. stack: scratch of 2 (b - a) entries, each stacked event's duration and
 * start side by side (no second read through ev); limit: the levels, by position. */
static void row_levels(const int64_t *ev, const int64_t *start, const int64_t *dur,
                       int64_t origin, Py_ssize_t a, Py_ssize_t b, int64_t *stack,
                       int8_t *limit) {
#define EV(p) (ev ? ev[p] : (p))
    Py_ssize_t sp = 0;
    for (Py_ssize_t i = a; i < b; i++) { /* nearest earlier event at least as long */
        int64_t e = EV(i), d = dur[e], s0 = start[e] - origin;
        while (sp > 0 && stack[2 * sp - 2] < d) sp--;
        int lim = MAX_LEVEL + 1;
        if (sp > 0) {
            int shared = bit_length(s0 ^ stack[2 * sp - 1]);
            if (shared < lim) lim = shared;
        }
        limit[i] = (int8_t)lim;
        stack[2 * sp] = d;
        stack[2 * sp + 1] = s0;
        sp++;
    }
    sp = 0;
    for (Py_ssize_t i = b - 1; i >= a; i--) { /* nearest later event strictly longer */
        int64_t e = EV(i), d = dur[e], s0 = start[e] - origin;
        while (sp > 0 && stack[2 * sp - 2] <= d) sp--;
        int lim = limit[i];
        if (sp > 0) {
            int shared = bit_length(s0 ^ stack[2 * sp - 1]);
            if (shared < lim) lim = shared;
        }
        int level = lim - 1 < 0 ? 0 : (lim - 1 > MAX_LEVEL ? MAX_LEVEL : lim - 1);
        int by_duration = bit_length(d) - 1; /* an event a bin long is always shown */
        if (by_duration > MAX_LEVEL) by_duration = MAX_LEVEL;
        limit[i] = (int8_t)(level > by_duration ? level : by_duration);
        stack[2 * sp] = d;
        stack[2 * sp + 1] = s0;
        sp++;
    }
#undef EV
}

static void detail_levels(const int64_t *row, const int64_t *start, const int64_t *dur,
                          Py_ssize_t n, int64_t *stack, int8_t *limit) {
    for (Py_ssize_t a = 0, b = 0; a < n; a = b) {
        for (b = a + 1; b < n && row[b] == row[a]; b++) {
        }
        row_levels(NULL, start, dur, 0, a, b, stack, limit);
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
    int64_t *stack = PyMem_RawMalloc((size_t)(n > 0 ? 2 * n : 1) * sizeof(int64_t));
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

typedef struct {
    Py_ssize_t n, n_lines, n_rows, n_segs;
    const int64_t *order0, *start, *dur;
    const int32_t *line, *depth;
    int64_t origin, *pos_start, *end_max;
    void *order;
    int wide;    /* order is int64, else int32 */
    int threads; /* workers for the rows (1: this thread only) */
    int32_t *line_depths, *seg_row;
    int8_t *seg_level;
    int64_t *seg_lo;
    /* scratch shared by the workers (each row's positions and segment slots are its own) */
    const int64_t *row_start, *by_row;
    const char *flat; /* per row: its positions are its events (ev NULL) */
    int8_t *level;
    int32_t *seg_count; /* per row: its segments, at slots row * 64 ... */
} Layout;

typedef struct {
    Layout *L;
    int64_t r0, r1, *stack; /* rows r0..r1-1; stack: 2 entries per position of a row */
} Part;

/* Levels, then positions by level within each row of P (stable: by start within a level),
 * with each segment's running end maximum; segments into the row's slots. */
static void *place_rows(void *arg) {
    Part *P = arg;
    Layout *L = P->L;
    for (int64_t r = P->r0; r < P->r1; r++) {
        const int64_t *ev = L->flat[r] ? NULL : L->by_row;
        Py_ssize_t a = L->row_start[r], b = L->row_start[r + 1];
        row_levels(ev, L->start, L->dur, L->origin, a, b, P->stack, L->level);
        int64_t at[MAX_LEVEL + 2] = {0}; /* positions of each level's run in the row */
        for (Py_ssize_t p = a; p < b; p++) at[L->level[p] + 1]++;
        at[0] = a;
        int32_t k = 0;
        for (int v = 0; v <= MAX_LEVEL; v++) {
            if (at[v + 1]) {
                L->seg_row[r * 64 + k] = (int32_t)r;
                L->seg_level[r * 64 + k] = (int8_t)v;
                L->seg_lo[r * 64 + k++] = at[v];
            }
            at[v + 1] += at[v];
        }
        L->seg_count[r] = k;
        int64_t reach[MAX_LEVEL + 1]; /* running maximum of the ends in each level's segment */
        for (int v = 0; v <= MAX_LEVEL; v++) reach[v] = INT64_MIN;
        for (Py_ssize_t p = a; p < b; p++) {
            int lv = L->level[p];
            int64_t e = ev ? ev[p] : p, q = at[lv]++, d = L->dur[e];
            int64_t end = L->start[e] + (d > 1 ? d : 1);
            if (end > reach[lv]) reach[lv] = end;
            if (L->wide)
                ((int64_t *)L->order)[q] = e;
            else
                ((int32_t *)L->order)[q] = (int32_t)e;
            L->pos_start[q] = L->start[e];
            L->end_max[q] = reach[lv];
        }
    }
    return NULL;
}

/* place_rows over every row, on L->threads workers given about equal shares of the events;
 * 0, or -2 when out of memory. The same index with any count. */
static int place_all(Layout *L, int64_t *stack) {
    int parts = L->threads < 1 ? 1 : (L->threads > 8 ? 8 : L->threads);
#ifdef _WIN32
    parts = 1;
#endif
    if (L->n < (1 << 20) || L->n_rows < 2) parts = 1; /* not worth a thread */
    Part part[8];
    int64_t r = 0;
    for (int k = 0; k < parts; k++) {
        part[k].L = L;
        part[k].r0 = r;
        int64_t share = L->n * (k + 1) / parts; /* the rows that start before this share */
        while (r < L->n_rows && (k == parts - 1 || L->row_start[r] < share)) r++;
        part[k].r1 = r;
        part[k].stack = k ? malloc(sizeof(int64_t) * 2 * (size_t)L->n) : stack;
        if (!part[k].stack) {
            for (int j = 1; j < k; j++) free(part[j].stack);
            return -2;
        }
    }
    int started = 1;
#ifndef _WIN32
    pthread_t helper[8];
    for (; started < parts; started++)
        if (pthread_create(&helper[started], NULL, place_rows, &part[started])) break;
#endif
    for (int k = started; k < parts; k++) place_rows(&part[k]); /* those not started */
    place_rows(&part[0]);
#ifndef _WIN32
    for (int k = 1; k < started; k++) pthread_join(helper[k], NULL);
#endif
    for (int k = 1; k < parts; k++) free(part[k].stack);
    return 0;
}

/* Rows, positions and segments of L (see the module comment); 0, or -1 for bad input, -2
 * when out of memory. Runs without the GIL. */
static int build_layout(Layout *L) {
    Py_ssize_t n = L->n;
    int result = -2;
    for (Py_ssize_t l = 0; l < L->n_lines; l++) L->line_depths[l] = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        int32_t line = L->line[e], depth = L->depth[e];
        if (line < 0 || line >= L->n_lines || depth < 0 ||
            (L->order0 && (L->order0[e] < 0 || L->order0[e] >= n)))
            return -1;
        if (depth + 1 > L->line_depths[line]) L->line_depths[line] = depth + 1;
    }
    int64_t *row_base = malloc(sizeof(int64_t) * (size_t)(L->n_lines + 1));
    if (!row_base) return -2;
    int64_t rows = 0;
    for (Py_ssize_t l = 0; l < L->n_lines; l++) {
        row_base[l] = rows;
        rows += L->line_depths[l];
    }
    L->n_rows = rows;
    int64_t *row_start = calloc((size_t)rows + 1, sizeof(int64_t));
    char *flat = malloc((size_t)rows + 1);
    int32_t *seg_count = malloc(sizeof(int32_t) * ((size_t)rows + 1));
    int64_t *by_row = malloc(sizeof(int64_t) * (size_t)n);
    int8_t *level = malloc((size_t)n);
    int64_t *stack = malloc(sizeof(int64_t) * (size_t)n * 2);
    L->seg_row = malloc(sizeof(int32_t) * (size_t)rows * 64);
    L->seg_level = malloc((size_t)rows * 64);
    L->seg_lo = malloc(sizeof(int64_t) * (size_t)rows * 64);
    if (!row_start || !flat || !seg_count || !by_row || !level || !stack || !L->seg_row ||
        !L->seg_level || !L->seg_lo)
        goto done;
    for (Py_ssize_t e = 0; e < n; e++) row_start[row_base[L->line[e]] + L->depth[e] + 1]++;
    for (int64_t r = 0; r < rows; r++) row_start[r + 1] += row_start[r];
    /* A line without nesting in events already in line order is one row whose positions are
     * its events (p itself: the events of the rows before it are those of the lines before
     * it), so its events are neither copied into by_row nor read through it. */
    for (Py_ssize_t l = 0; l < L->n_lines; l++)
        for (int32_t d = 0; d < L->line_depths[l]; d++)
            flat[row_base[l] + d] = !L->order0 && L->line_depths[l] == 1;
    /* by row, stable: each row keeps order0's (start) order; stack serves as the cursors */
    for (int64_t r = 0; r < rows; r++) stack[r] = row_start[r];
    for (Py_ssize_t p = 0; p < n; p++) {
        int64_t e = L->order0 ? L->order0[p] : p;
        int64_t r = row_base[L->line[e]] + L->depth[e];
        if (!flat[r]) by_row[stack[r]++] = e;
    }
    L->row_start = row_start;
    L->by_row = by_row;
    L->flat = flat;
    L->level = level;
    L->seg_count = seg_count;
    if (place_all(L, stack)) goto done;
    L->n_segs = 0; /* each row's segments, from its slots, in row order */
    for (int64_t r = 0; r < rows; r++)
        for (int32_t k = 0; k < seg_count[r]; k++, L->n_segs++) {
            L->seg_row[L->n_segs] = L->seg_row[r * 64 + k];
            L->seg_level[L->n_segs] = L->seg_level[r * 64 + k];
            L->seg_lo[L->n_segs] = L->seg_lo[r * 64 + k];
        }
    result = 0;
done:
    free(row_base);
    free(row_start);
    free(flat);
    free(seg_count);
    free(by_row);
    free(level);
    free(stack);
    return result;
}

static PyObject *layout(PyObject *self, PyObject *args) {
    Py_buffer b[9];
    Layout L = {0};
    long long n_lines, origin;
    int threads = 1;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*LLw*w*w*w*|i", &b[0], &b[1], &b[2], &b[3], &b[4],
                          &n_lines, &origin, &b[5], &b[6], &b[7], &b[8], &threads))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = b[3].len / 8;
    L.wide = b[5].len == n * 8;
    if ((b[0].len != n * 8 && b[0].len != 0) || b[1].len != n * 4 || b[2].len != n * 4 || b[3].len != n * 8 || b[4].len != n * 8 ||
        (!L.wide && b[5].len != n * 4) || b[6].len != n * 8 || b[7].len != n * 8 ||
        b[8].len != n_lines * 4 || n_lines < 0) {
        PyErr_SetString(PyExc_ValueError, "layout: columns of different lengths");
        goto done;
    }
    L.n = n;
    L.n_lines = (Py_ssize_t)n_lines;
    L.origin = origin;
    L.threads = threads;
    L.order0 = b[0].len ? b[0].buf : NULL;
    L.line = b[1].buf;
    L.depth = b[2].buf;
    L.start = b[3].buf;
    L.dur = b[4].buf;
    L.order = b[5].buf;
    L.pos_start = b[6].buf;
    L.end_max = b[7].buf;
    L.line_depths = b[8].buf;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = build_layout(&L);
    Py_END_ALLOW_THREADS
    if (status == -1)
        PyErr_SetString(PyExc_ValueError, "layout: a line, depth or event out of range");
    else if (status == -2)
        PyErr_NoMemory();
    else
        out = Py_BuildValue("y#y#y#", (const char *)L.seg_row, L.n_segs * 4,
                            (const char *)L.seg_level, L.n_segs,
                            (const char *)L.seg_lo, L.n_segs * 8);
done:
    free(L.seg_row);
    free(L.seg_level);
    free(L.seg_lo);
    for (int i = 0; i < 9; i++) PyBuffer_Release(&b[i]);
    return out;
}

static PyObject *depths(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    if (!PyArg_ParseTuple(args, "y*y*y*", &b[0], &b[1], &b[2])) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = b[0].len / 4;
    if (b[1].len != n * 8 || b[2].len != n * 8 || n == 0) {
        PyErr_SetString(PyExc_ValueError, "depths: line, start and dur differ in length or are empty");
        goto done;
    }
    const int32_t *line = b[0].buf;
    const int64_t *start = b[1].buf, *dur = b[2].buf;
    int64_t *stack = malloc(sizeof(int64_t) * (size_t)n);
    PyObject *depth = PyBytes_FromStringAndSize(NULL, n * 4);
    if (!stack || !depth) {
        free(stack);
        Py_XDECREF(depth);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int32_t *d = (int32_t *)PyBytes_AS_STRING(depth);
    int64_t first = start[0], last = start[0] + dur[0];
    int ordered = 1;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t sp = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s0 = start[i], e0 = s0 + dur[i];
        if (i > 0) {
            if (line[i] < line[i - 1] ||
                (line[i] == line[i - 1] &&
                 (s0 < start[i - 1] || (s0 == start[i - 1] && e0 > start[i - 1] + dur[i - 1])))) {
                ordered = 0;
                break;
            }
            if (line[i] != line[i - 1]) sp = 0;
        }
        int64_t at = s0;
        while (sp > 0) { /* parents that ended when i starts are no one's parent after it */
            int64_t top = stack[sp - 1], t_end = start[top] + (dur[top] > 1 ? dur[top] : 1);
            if (t_end > at) break;
            sp--;
        }
        d[i] = (int32_t)sp;
        stack[sp++] = i;
        if (s0 < first) first = s0;
        if (e0 > last) last = e0;
    }
    Py_END_ALLOW_THREADS
    free(stack);
    if (!ordered) {
        Py_DECREF(depth);
        out = Py_NewRef(Py_None);
    } else {
        out = Py_BuildValue("NLL", depth, (long long)first, (long long)last);
    }
done:
    for (int i = 0; i < 3; i++) PyBuffer_Release(&b[i]);
    return out;
}

static PyMethodDef methods[] = {
    {"search", search, METH_VARARGS, "Insertion points of keys in sorted segments (int64)."},
    {"levels", levels, METH_VARARGS, "Level of detail of events sorted by (row, start) (int8)."},
    {"layout", layout, METH_VARARGS, "The trace index's positions and segments (see above)."},
    {"depths", depths, METH_VARARGS, "Nesting depths of events in line order, else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_segsearch", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__segsearch(void) { return stamped(PyModule_Create(&module)); }
