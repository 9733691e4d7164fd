/* The trace index's build passes in one walk each (stats/trace_index/lod.py and layout.py
 * hold the NumPy twins and say what the arrays mean; every array here is byte-identical to
 * theirs).
 *
 * depths(order, line, start, dur, depth, parent) -> bool
 *   order int64 (n, event indexes), line int32, start and dur int64 (m events each), depth
 *   int32 (m, writable), parent int64 (m, writable) or None. Walks the events in `order`
 *   (`lod.line_order`'s: line ascending, then start ascending) with a stack of the events
 *   still running: popped while its top ends at or before the event's start (end = start +
 *   max(dur, 1)), the top is then the event's parent (the nearest earlier event of its line
 *   with end > start: everything popped ended before this start, and so before any later
 *   one's) and the stack's size its depth. Writes depth[e] and parent[e] (an event index, -1
 *   for none) for each e of order; returns True, or False at the first event out of that
 *   order or whose end overflows int64 (the outputs partly written: the caller runs the twin,
 *   which wraps as NumPy does). O(n), where the twin takes a sort and a search per line and
 *   pointer jumping where the line does not nest properly.
 *
 * levels(row, start_rel, dur, level) -> None
 *   row, start_rel and dur int64, level int8 (writable), all of one length: `lod.detail_levels`
 *   for events sorted by (row, start). The nearest event of the row before each one that is
 *   at least as long, and after it that is strictly longer, by a monotonic stack each way
 *   (the first pass keeps its bound in `level`, the second finishes it): no full-size
 *   temporary, where the twin's pointer jumping makes several per round.
 *
 * positions(order0, line, depth, start, dur, origin, order, start_out, end_max, row_line,
 *           row_depth, seg_row, seg_level, seg_lo) -> (rows, segments) | None
 *   `layout.positions_numpy` in one pass: order0 int64 (`lod.line_order`'s), line and depth
 *   int32, start and dur int64, all n long; then the outputs, n long each and writable: order
 *   (int32 or int64), start_out and end_max int64, row_line, row_depth and seg_row int32,
 *   seg_level int8, seg_lo int64. The rows (line, depth) are each line's run of order0
 *   sorted by depth, and each row sorted by level into its segments (counting sorts, both
 *   stable, where the twin sorts the whole profile twice); the levels are `levels`' and the
 *   segments' running maximum ends are kept as the positions are written. The first `rows`
 *   and `segments` items of the row and segment outputs are written. None (the twin
 *   answers) when order0 is not in line order, a depth is outside 0..n-1, or a time minus
 *   origin or an end overflows int64.
 *
 * bit_length below is the twin's (`segments.bit_length`, by float64 frexp): above 2**53 a
 * value rounds to the nearest double first, so 2**54 - 1 counts 55 bits, as there. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../_native.h"

#define MAX_LEVEL 62

/* A growable stack of positions. */
typedef struct {
    Py_ssize_t *items;
    Py_ssize_t top, cap;
} Stack;

static int stack_init(Stack *s) {
    s->top = 0;
    s->cap = 256;
    s->items = malloc((size_t)s->cap * sizeof(Py_ssize_t));
    return s->items != NULL;
}

static int stack_push(Stack *s, Py_ssize_t k) {
    if (s->top == s->cap) {
        Py_ssize_t *grown = realloc(s->items, (size_t)s->cap * 2 * sizeof(Py_ssize_t));
        if (!grown) return 0;
        s->items = grown;
        s->cap *= 2;
    }
    s->items[s->top++] = k;
    return 1;
}

static int bit_length(int64_t x) {
    if (x <= 0) return 0;
    int exponent;
    frexp((double)x, &exponent);  /* as NumPy's astype(float64) then frexp */
    return exponent;
}

/* Whether every index of order (n) names one of m events; ValueError if not. */
static int indexes_in_range(const int64_t *order, Py_ssize_t n, Py_ssize_t m, const char *what) {
    for (Py_ssize_t k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= m) {
            PyErr_Format(PyExc_ValueError, "%s: an event index outside the events", what);
            return 0;
        }
    }
    return 1;
}

/* 1: done; 0: out of order or an end past int64; -1: no memory. */
static int walk_depths(const int64_t *order, Py_ssize_t n, const int32_t *line,
                       const int64_t *start, const int64_t *dur, int32_t *depth,
                       int64_t *parent) {
    Stack s;
    if (!stack_init(&s)) return -1;
    int64_t *end_of = NULL;  /* the stack's ends, beside it (no gather through order) */
    Py_ssize_t end_cap = s.cap;
    end_of = malloc((size_t)end_cap * sizeof(int64_t));
    int result = 1;
    if (!end_of) {
        result = -1;
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t e = order[k];
        int64_t begin = start[e], length = dur[e] > 1 ? dur[e] : 1, finish;
        if (!add_ok(begin, length, &finish)) {
            result = 0;
            goto done;
        }
        if (k == 0 || line[e] != line[order[k - 1]]) {
            if (k && line[e] < line[order[k - 1]]) {
                result = 0;
                goto done;
            }
            s.top = 0;
        } else if (begin < start[order[k - 1]]) {
            result = 0;
            goto done;
        }
        while (s.top && end_of[s.top - 1] <= begin) s.top--;
        depth[e] = (int32_t)(s.top < INT32_MAX ? s.top : INT32_MAX);
        if (parent) parent[e] = s.top ? order[s.items[s.top - 1]] : -1;
        if (!stack_push(&s, k)) {
            result = -1;
            goto done;
        }
        if (s.cap > end_cap) {
            int64_t *grown = realloc(end_of, (size_t)s.cap * sizeof(int64_t));
            if (!grown) {
                result = -1;
                goto done;
            }
            end_of = grown;
            end_cap = s.cap;
        }
        end_of[s.top - 1] = finish;
    }
done:
    free(s.items);
    free(end_of);
    return result;
}

static PyObject *depths(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5]))
        return NULL;
    static const char *names[6] = {"order", "line", "start", "dur", "depth", "parent"};
    static const Py_ssize_t sizes[6] = {8, 4, 8, 8, 4, 8};
    int wanted = objs[5] != Py_None ? 6 : 5;
    Py_buffer v[6];
    int held = 0;
    PyObject *result = NULL;
    for (; held < wanted; held++)
        if (native_array(objs[held], &v[held], sizes[held], held >= 4, names[held]) < 0)
            goto done;
    Py_ssize_t n = v[0].len / 8, m = v[1].len / 4;
    if (v[2].len / 8 != m || v[3].len / 8 != m || v[4].len / 4 != m ||
        (wanted == 6 && v[5].len / 8 != m)) {
        PyErr_SetString(PyExc_ValueError, "depths: line, start, dur, depth, parent of one length");
        goto done;
    }
    const int64_t *order = v[0].buf;
    if (!indexes_in_range(order, n, m, "depths")) goto done;
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = walk_depths(order, n, v[1].buf, v[2].buf, v[3].buf, v[4].buf,
                        wanted == 6 ? v[5].buf : NULL);
    Py_END_ALLOW_THREADS
    if (found < 0) PyErr_NoMemory();
    else result = PyBool_FromLong(found);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* The levels of positions a..b-1 of one row (event idx[k], or k where idx is NULL; times
 * from origin), as `lod.detail_levels_numpy`: 0, or -1 with no memory. */
static int row_levels(const int64_t *idx, Py_ssize_t a, Py_ssize_t b, const int64_t *start,
                      const int64_t *dur, int64_t origin, int8_t *level, Stack *s) {
#define EVENT(k) (idx ? idx[k] : (int64_t)(k))
    /* before: the nearest earlier event at least as long; the bound kept in level */
    s->top = 0;
    for (Py_ssize_t k = a; k < b; k++) {
        int64_t e = EVENT(k), d = dur[e];
        while (s->top && dur[EVENT(s->items[s->top - 1])] < d) s->top--;
        int limit = MAX_LEVEL + 1;
        if (s->top) {
            int64_t other = start[EVENT(s->items[s->top - 1])] - origin;
            int shared = bit_length((start[e] - origin) ^ other);
            if (shared < limit) limit = shared;
        }
        level[k] = (int8_t)limit;
        if (!stack_push(s, k)) return -1;
    }
    /* after: the nearest later event strictly longer; then the level */
    s->top = 0;
    for (Py_ssize_t k = b - 1; k >= a; k--) {
        int64_t e = EVENT(k), d = dur[e];
        while (s->top && dur[EVENT(s->items[s->top - 1])] <= d) s->top--;
        int limit = level[k];
        if (s->top) {
            int64_t other = start[EVENT(s->items[s->top - 1])] - origin;
            int shared = bit_length((start[e] - origin) ^ other);
            if (shared < limit) limit = shared;
        }
        int found = (limit < 1 ? 1 : limit) - 1;
        int by_duration = bit_length(d) - 1;
        if (by_duration > MAX_LEVEL) by_duration = MAX_LEVEL;
        level[k] = (int8_t)(found > by_duration ? found : by_duration);
        if (!stack_push(s, k)) return -1;
    }
    return 0;
#undef EVENT
}

/* 0: done; -1: no memory. */
static int walk_levels(const int64_t *row, const int64_t *start, const int64_t *dur,
                       int8_t *level, Py_ssize_t n) {
    Stack s;
    if (!stack_init(&s)) return -1;
    int failed = 0;
    for (Py_ssize_t a = 0, b; a < n && !failed; a = b) {
        for (b = a + 1; b < n && row[b] == row[a]; b++) {
        }
        failed = row_levels(NULL, a, b, start, dur, 0, level, &s);
    }
    free(s.items);
    return failed;
}

static PyObject *levels(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    static const char *names[4] = {"row", "start_rel", "dur", "level"};
    Py_buffer v[4];
    int held = 0;
    PyObject *result = NULL;
    for (; held < 4; held++)
        if (native_array(objs[held], &v[held], held == 3 ? 1 : 8, held == 3, names[held]) < 0)
            goto done;
    Py_ssize_t n = v[0].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n || v[3].len != n) {
        PyErr_SetString(PyExc_ValueError, "levels: arrays of one length expected");
        goto done;
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = walk_levels(v[0].buf, v[1].buf, v[2].buf, v[3].buf, n);
    Py_END_ALLOW_THREADS
    if (failed) PyErr_NoMemory();
    else result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

/* The positions of layout.positions_numpy: 1 done (*rows, *segs set); 0 when the events are
 * not in line order, a depth is negative, or a time overflows (the twin answers); -1 no
 * memory. Rows: counting sort of each line's run of order by depth (stable: start order
 * kept); segments: counting sort of each row by level. */
typedef struct {
    const int64_t *order0;
    const int32_t *line, *depth;
    const int64_t *start, *dur;
    int64_t origin;
    Py_ssize_t n;
    void *order;  /* int32 or int64 */
    int wide;      /* order is int64 */
    int64_t *start_out, *end_max;
    int32_t *row_line, *row_depth, *seg_row;
    int8_t *seg_level;
    int64_t *seg_lo;
    Py_ssize_t rows, segs;
} Layout;

static int lay_out(Layout *o) {
    Py_ssize_t n = o->n;
    int64_t *by_row = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    int8_t *level = malloc((size_t)(n ? n : 1));
    Py_ssize_t *count = NULL;
    int64_t *bounds = NULL;  /* each row's first position */
    Stack s = {NULL, 0, 0};
    int result = 0;
    if (!by_row || !level || !stack_init(&s)) goto no_memory;
    int32_t top_depth = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t e = o->order0[k], rel, finish;
        if (o->depth[e] < 0 || o->depth[e] >= n) goto done;  /* no depth of a nesting */
        if (k && o->line[e] < o->line[o->order0[k - 1]]) goto done;
        if (!sub_ok(o->start[e], o->origin, &rel)) goto done;
        if (!add_ok(o->start[e], o->dur[e] > 1 ? o->dur[e] : 1, &finish)) goto done;
        if (o->depth[e] > top_depth) top_depth = o->depth[e];
    }
    Py_ssize_t buckets = (Py_ssize_t)top_depth + 1 > MAX_LEVEL + 1 ? (Py_ssize_t)top_depth + 1
                                                                  : MAX_LEVEL + 1;
    count = malloc((size_t)buckets * sizeof(Py_ssize_t));
    if (!count) goto no_memory;
    /* rows: each line's run sorted by depth */
    Py_ssize_t rows = 0;
    for (Py_ssize_t a = 0, b; a < n; a = b) {
        int32_t at_line = o->line[o->order0[a]], deepest = 0;
        for (b = a; b < n && o->line[o->order0[b]] == at_line; b++)
            if (o->depth[o->order0[b]] > deepest) deepest = o->depth[o->order0[b]];
        for (int32_t d = 0; d <= deepest; d++) count[d] = 0;
        for (Py_ssize_t k = a; k < b; k++) count[o->depth[o->order0[k]]]++;
        Py_ssize_t at = a;
        for (int32_t d = 0; d <= deepest; d++) {
            Py_ssize_t c = count[d];
            count[d] = at;
            if (c) {
                o->row_line[rows] = at_line;
                o->row_depth[rows] = d;
                /* the row's first position, kept in seg_lo until the segments are made */
                o->seg_lo[rows++] = at;
            }
            at += c;
        }
        for (Py_ssize_t k = a; k < b; k++) by_row[count[o->depth[o->order0[k]]]++] = o->order0[k];
    }
    /* levels per row, then each row sorted by level into segments */
    Py_ssize_t segs = 0;
    int64_t running[MAX_LEVEL + 1];
    bounds = malloc((size_t)(rows ? rows : 1) * sizeof(int64_t));
    if (!bounds) goto no_memory;
    for (Py_ssize_t r = 0; r < rows; r++) bounds[r] = o->seg_lo[r];
    for (Py_ssize_t r = 0; r < rows; r++) {
        Py_ssize_t a = (Py_ssize_t)bounds[r], b = r + 1 < rows ? (Py_ssize_t)bounds[r + 1] : n;
        if (row_levels(by_row, a, b, o->start, o->dur, o->origin, level, &s) < 0)
            goto no_memory;
        for (int l = 0; l <= MAX_LEVEL; l++) count[l] = 0;
        for (Py_ssize_t k = a; k < b; k++) count[level[k]]++;
        Py_ssize_t at = a;
        for (int l = 0; l <= MAX_LEVEL; l++) {
            Py_ssize_t c = count[l];
            count[l] = at;
            if (c) {
                o->seg_row[segs] = (int32_t)r;
                o->seg_level[segs] = (int8_t)l;
                o->seg_lo[segs++] = at;
            }
            at += c;
            running[l] = INT64_MIN;
        }
        for (Py_ssize_t k = a; k < b; k++) {
            int l = level[k];
            Py_ssize_t pos = count[l]++;
            int64_t e = by_row[k], finish = o->start[e] + (o->dur[e] > 1 ? o->dur[e] : 1);
            if (o->wide) ((int64_t *)o->order)[pos] = e;
            else ((int32_t *)o->order)[pos] = (int32_t)e;
            o->start_out[pos] = o->start[e];
            if (finish > running[l]) running[l] = finish;
            o->end_max[pos] = running[l];
        }
    }
    o->rows = rows;
    o->segs = segs;
    result = 1;
    goto done;
no_memory:
    result = -1;
done:
    free(by_row);
    free(level);
    free(count);
    free(bounds);
    free(s.items);
    return result;
}

static PyObject *positions(PyObject *self, PyObject *args) {
    enum { N_ARGS = 13 };
    PyObject *objs[N_ARGS];
    long long origin;
    if (!PyArg_ParseTuple(args, "OOOOOLOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &origin, &objs[5], &objs[6], &objs[7], &objs[8], &objs[9],
                          &objs[10], &objs[11], &objs[12]))
        return NULL;
    static const char *names[N_ARGS] = {"order0", "line", "depth", "start", "dur",
                                        "order", "start_out", "end_max", "row_line",
                                        "row_depth", "seg_row", "seg_level", "seg_lo"};
    static const Py_ssize_t sizes[N_ARGS] = {8, 4, 4, 8, 8, 4, 8, 8, 4, 4, 4, 1, 8};
    Py_buffer v[N_ARGS];
    int held = 0;
    PyObject *result = NULL;
    for (; held < N_ARGS; held++) {
        /* order (5): int32 or int64, told by its buffer's item size */
        if (native_array(objs[held], &v[held], sizes[held], held >= 5, names[held]) < 0)
            goto done;
        if (held == 5 && v[5].itemsize != 4 &&
            (v[5].itemsize != 8 || v[5].len % 8 || (uintptr_t)v[5].buf % 8)) {
            held++;
            PyErr_SetString(PyExc_ValueError, "positions: an aligned int32 or int64 order");
            goto done;
        }
    }
    Py_ssize_t n = v[0].len / 8;
    Py_ssize_t m = v[1].len / 4;
    int wide = v[5].itemsize == 8;
    if (n != m || v[2].len / 4 != m || v[3].len / 8 != m || v[4].len / 8 != m ||
        v[5].len / (wide ? 8 : 4) != n || v[6].len / 8 != n ||
        v[7].len / 8 != n || v[8].len / 4 != n || v[9].len / 4 != n || v[10].len / 4 != n ||
        v[11].len != n || v[12].len / 8 != n || n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "positions: arrays of one length expected");
        goto done;
    }
    const int64_t *order0 = v[0].buf;
    if (!indexes_in_range(order0, n, m, "positions")) goto done;
    Layout o = {order0, v[1].buf, v[2].buf, v[3].buf, v[4].buf, (int64_t)origin, n,
                v[5].buf, wide, v[6].buf, v[7].buf, v[8].buf, v[9].buf, v[10].buf,
                v[11].buf, v[12].buf, 0, 0};
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = lay_out(&o);
    Py_END_ALLOW_THREADS
    if (found < 0) PyErr_NoMemory();
    else if (found == 0) result = Py_NewRef(Py_None);
    else result = Py_BuildValue("(nn)", o.rows, o.segs);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&v[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"depths", depths, METH_VARARGS, "Nesting depths and parents in line order (see source)."},
    {"levels", levels, METH_VARARGS, "Levels of detail of sorted rows (see source)."},
    {"positions", positions, METH_VARARGS, "The index's sorted positions (see source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lod", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__lod(void) { return stamped(PyModule_Create(&module)); }
