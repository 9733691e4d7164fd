/*
 * Decode serialized XSpace bytes straight into columns, without creating a Python object
 * per event. Used by stepscope.xspace.wire; a pure-Python path (protobuf) gives the same
 * result when this module is not built.
 *
 * Why C: a 5M-event profile must load at >= 2M events/s in under 100 bytes per event; a
 * protobuf parse alone allocates more than that and iterating events from Python costs
 * about a microsecond each.
 *
 * decode(buffer, max_bytes=-1, threads=1, chunk_events=CHUNK_EVENTS) -> (space_header: bytes,
 *                    planes: list[(plane_header: bytes, lines: list[line])],
 *                    columns: dict[str, bytearray], strings: list[bytes], aggregated: int)
 * line = (id, display_id, name: bytes, display_name: bytes, timestamp_ns, duration_ps,
 *         first_event, event_count)
 * "header" bytes are every field of the message except the repeated child (planes / lines),
 * copied verbatim so protobuf can parse the small remainder.
 *
 * Passes (the result does not depend on `threads`):
 *  A. (GIL held) walk planes and lines, build the headers and line tuples, and cut each
 *     line's events into chunks of at most CHUNK_EVENTS events (an event is skipped by its
 *     length, not parsed);
 *  B. (GIL released, chunks shared by `threads` workers) count each chunk's stats;
 *  C. (GIL released, same workers) fill the columns, each chunk at its place (prefix sums
 *     of A's and B's counts); a string stat holds the offset of its bytes in the buffer;
 *  D. (GIL held) intern the strings in file order with a C hash table: one Python bytes
 *     object per distinct string, ids by first appearance (the fallback's order).
 *
 * max_bytes >= 0 bounds the memory the columns (and the model built from them) will take,
 * checked after counting and before anything is allocated: a crafted file of empty events
 * inflates 2 wire bytes to 96 bytes of columns and model (measured). Over the bound,
 * MemoryError is raised with args (message, bytes_needed).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_fastwire.h"

/* Events per unit of parallel work: small enough to balance a few uneven lines over two
 * workers, large enough that the per-chunk bookkeeping is noise (tests pass smaller ones). */
#define CHUNK_EVENTS 32768

typedef struct {
    Chunk *chunks;
    Py_ssize_t n_chunks, cap_chunks;
    Py_ssize_t n_events, line_index, chunk_events;
    Chunk open;           /* the chunk being cut from the current line */
} Walk;

static int push_chunk(Walk *w) {
    if (w->open.n_events == 0) return 0;
    if (w->n_chunks == w->cap_chunks) {
        Py_ssize_t cap = w->cap_chunks ? 2 * w->cap_chunks : 64;
        Chunk *grown = PyMem_Realloc(w->chunks, (size_t)cap * sizeof(Chunk));
        if (!grown) { PyErr_NoMemory(); return -1; }
        w->chunks = grown;
        w->cap_chunks = cap;
    }
    w->chunks[w->n_chunks++] = w->open;
    memset(&w->open, 0, sizeof(w->open));
    return 0;
}

/* Pass A for one line: its fields, and its events cut into chunks (skipped by length). */
static PyObject *walk_line(Walk *w, Cursor c) {
    uint64_t tag, v;
    int64_t id = 0, display_id = 0, ts = 0, dur = 0;
    Cursor name = {NULL, NULL}, display_name = {NULL, NULL};
    Py_ssize_t first = w->n_events;
    while (c.p < c.end) {
        const uint8_t *field_start = c.p;
        if (read_varint(&c, &tag)) return NULL;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (wire == 0 && (field == 1 || field == 10 || field == 3 || field == 9)) {
            if (read_varint(&c, &v)) return NULL;
            if (field == 1) id = (int64_t)v;
            else if (field == 10) display_id = (int64_t)v;
            else if (field == 3) ts = (int64_t)v;
            else dur = (int64_t)v;
        } else if (wire == 2 && (field == 2 || field == 11)) {
            if (read_len(&c, field == 2 ? &name : &display_name)) return NULL;
        } else if (field == 4 && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub)) return NULL;
            if (w->open.n_events == 0) {
                w->open.p = field_start;
                w->open.line = (int32_t)w->line_index;
                w->open.first_event = w->n_events;
            }
            w->open.end = c.p;
            w->open.n_events++;
            w->n_events++;
            if (w->open.n_events == w->chunk_events && push_chunk(w)) return NULL;
        } else if (skip_value(&c, wire)) {
            return NULL;
        }
    }
    if (push_chunk(w)) return NULL;
    w->line_index++;
    return Py_BuildValue("(LLy#y#LLnn)", (long long)id, (long long)display_id,
                         name.p ? (const char *)name.p : "", (Py_ssize_t)(name.end - name.p),
                         display_name.p ? (const char *)display_name.p : "",
                         (Py_ssize_t)(display_name.end - display_name.p),
                         (long long)ts, (long long)dur, first, w->n_events - first);
}

/* Walk a message, handing fields numbered `child` to `on_child` and copying the rest. */
static PyObject *split_message(Walk *w, Cursor c, uint32_t child, PyObject *children,
                               PyObject *(*on_child)(Walk *, Cursor)) {
    PyObject *header = PyByteArray_FromStringAndSize(NULL, 0);
    if (!header) return NULL;
    uint64_t tag;
    while (c.p < c.end) {
        const uint8_t *field_start = c.p;
        if (read_varint(&c, &tag)) goto fail;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (field == child && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub)) goto fail;
            PyObject *item = on_child(w, sub);
            if (!item) goto fail;
            int failed = PyList_Append(children, item);
            Py_DECREF(item);
            if (failed) goto fail;
        } else {
            if (skip_value(&c, wire)) goto fail;
            Py_ssize_t old = PyByteArray_GET_SIZE(header), add = c.p - field_start;
            if (PyByteArray_Resize(header, old + add)) goto fail;
            memcpy(PyByteArray_AS_STRING(header) + old, field_start, add);
        }
    }
    return header;
fail:
    /* Corrupt data is reported by returning NULL without an exception. */
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, CORRUPT);
    Py_DECREF(header);
    return NULL;
}

static PyObject *walk_plane(Walk *w, Cursor c) {
    PyObject *lines = PyList_New(0);
    if (!lines) return NULL;
    PyObject *header = split_message(w, c, 3, lines, walk_line);
    if (!header) { Py_DECREF(lines); return NULL; }
    return Py_BuildValue("(NN)", header, lines);
}

static PyObject *new_column(Py_ssize_t count, Py_ssize_t width, void **data) {
    PyObject *column = PyByteArray_FromStringAndSize(NULL, count * width);
    if (column) *data = PyByteArray_AS_STRING(column);
    return column;
}

static PyObject *memory_error(long long needed) {
    PyObject *info = Py_BuildValue("(sL)", "decoded profile exceeds the memory bound", needed);
    if (info) {
        PyErr_SetObject(PyExc_MemoryError, info);
        Py_DECREF(info);
    }
    return NULL;
}

/* Bytes per event and per stat of the decoded columns plus the model's mapped copies. */
#define BYTES_PER_EVENT 96
#define BYTES_PER_STAT 24

static PyObject *decode(PyObject *self, PyObject *args) {
    PyObject *arg;
    long long max_bytes = -1;
    int threads = 1;
    Py_ssize_t chunk_events = CHUNK_EVENTS;
    if (!PyArg_ParseTuple(args, "O|Lin", &arg, &max_bytes, &threads, &chunk_events)) return NULL;
    if (threads < 1 || chunk_events < 1) {
        PyErr_SetString(PyExc_ValueError, "decode: threads and chunk_events must be at least 1");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Cursor all = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    Walk w;
    memset(&w, 0, sizeof(w));
    w.chunk_events = chunk_events;
    Columns out;
    memset(&out, 0, sizeof(out));
    PyObject *planes = PyList_New(0), *header = NULL, *columns = NULL, *strings = NULL;
    PyObject *result = NULL;
    if (!planes) goto done;

    /* Pass A: headers, lines and chunks. */
    header = split_message(&w, all, 1, planes, walk_plane);
    if (!header) goto done;

    /* Pass B: stats per chunk. */
    if (run_chunks(w.chunks, w.n_chunks, threads, NULL, all.p)) {
        PyErr_SetString(PyExc_ValueError, CORRUPT);
        goto done;
    }
    Py_ssize_t n_ev = w.n_events, n_st = 0;
    long long aggregated = 0;
    for (Py_ssize_t i = 0; i < w.n_chunks; i++) {
        w.chunks[i].first_stat = n_st;
        n_st += w.chunks[i].n_stats;
        aggregated += w.chunks[i].aggregated;
    }
    long long needed = (long long)n_ev * BYTES_PER_EVENT + (long long)n_st * BYTES_PER_STAT;
    if (max_bytes >= 0 && needed > max_bytes) {
        memory_error(needed);
        goto done;
    }

    /* Pass C: fill. */
    columns = PyDict_New();
    if (!columns) goto done;
    struct { const char *name; Py_ssize_t count, width; void **data; } spec[] = {
        {"ev_meta", n_ev, 8, (void **)&out.ev_meta},
        {"ev_offset_ps", n_ev, 8, (void **)&out.ev_offset_ps},
        {"ev_duration_ps", n_ev, 8, (void **)&out.ev_duration_ps},
        {"ev_stat_start", n_ev + 1, 8, (void **)&out.ev_stat_start},
        {"ev_line", n_ev, 4, (void **)&out.ev_line},
        {"st_meta", n_st, 8, (void **)&out.st_meta},
        {"st_value", n_st, 8, (void **)&out.st_value},
        {"st_kind", n_st, 1, (void **)&out.st_kind},
    };
    for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
        PyObject *column = new_column(spec[i].count, spec[i].width, spec[i].data);
        if (!column || PyDict_SetItemString(columns, spec[i].name, column)) {
            Py_XDECREF(column);
            goto done;
        }
        Py_DECREF(column);
    }
    if (run_chunks(w.chunks, w.n_chunks, threads, &out, all.p)) {
        PyErr_SetString(PyExc_ValueError, CORRUPT);
        goto done;
    }
    out.ev_stat_start[n_ev] = n_st;

    /* Pass D: strings. */
    strings = intern_strings(w.chunks, w.n_chunks, &out, all.p);
    if (!strings) goto done;
    result = Py_BuildValue("(OOOOL)", header, planes, columns, strings, aggregated);
done:
    Py_XDECREF(header);
    Py_XDECREF(planes);
    Py_XDECREF(columns);
    Py_XDECREF(strings);
    PyMem_Free(w.chunks);
    PyBuffer_Release(&view);
    return result;
}

/*
 * last_at_or_before(owners, events) -> int64 bytes, or None
 * Per event: the position of the last owner <= it, -1 when none (np.searchsorted(owners,
 * events, "right") - 1) by one merge of the two ascending columns (owners: int32, the events
 * of a stat's or an argument's rows; events: int64). None when the events are not ascending
 * (the caller searches). Shared by model.Profile.stat_at and the Kineto scanner's arg_at.
 */
static PyObject *last_at_or_before(PyObject *self, PyObject *args) {
    PyObject *owners_obj, *events_obj;
    Py_buffer owners, events;
    if (!PyArg_ParseTuple(args, "OO", &owners_obj, &events_obj)) return NULL;
    if (native_array(owners_obj, &owners, 4, 0, "last_at_or_before: owners")) return NULL;
    if (native_array(events_obj, &events, 8, 0, "last_at_or_before: events")) {
        PyBuffer_Release(&owners);
        return NULL;
    }
    Py_ssize_t n = owners.len / 4, m = events.len / 8, j = 0;
    const int32_t *own = owners.buf;
    const int64_t *ev = events.buf;
    PyObject *out = NULL;
    for (Py_ssize_t i = 1; i < m; i++) {
        if (ev[i] < ev[i - 1]) {
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, m * 8);
    if (!out) goto done;
    int64_t *at = (int64_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < m; i++) {
        while (j < n && own[j] <= ev[i]) j++;
        at[i] = (int64_t)j - 1;
    }
done:
    PyBuffer_Release(&owners);
    PyBuffer_Release(&events);
    return out;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Decode XSpace bytes into columns (see module source)."},
    {"last_at_or_before", last_at_or_before, METH_VARARGS, "Merge search (see above)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastwire", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastwire(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddFunctions(m, header_methods) ||
              PyModule_AddFunctions(m, row_methods))) {
        Py_DECREF(m);
        return NULL;
    }
    return stamped(m);
}
