/*
 * One pass over a Kineto trace's ``traceEvents`` array, straight from the JSON bytes, into
 * columns: no Python object per event. Used by stepscope.xspace.kineto.scan; when this module
 * is not built, when it returns None, or when it flags events it does not model exactly
 * (F_BAD), the importer scans the trace with its Python twin (pyscan.py: the same columns,
 * tested), which reads those events by the Kineto rules.
 *
 * scan_stream(readinto, limit, window) (below) -> None (not an object with one traceEvents
 *               array of valid, well-formed JSON that this scanner models) or (header: bytes,
 *               strings: list[bytes], columns: dict[str, bytes]); the only scanner: a whole
 *               text in memory is read through a BytesIO (tests/support/kineto.scanned).
 *
 * header: the document with an empty traceEvents array (decoded by msgspec).
 * strings: distinct raw JSON string contents (escapes not decoded: Python decodes each once)
 * and the raw text of list/object argument values; ids index this list.
 * Per event: ph (uint8, 0 when absent), flags (uint8, F_* in _kscan.h), cat / name (int32
 * string id, -1 absent or null), pid / tid (int32: the integer, or the string id with
 * F_PID_STR / F_TID_STR; integers beyond int32 are F_BAD), ts / dur (int64 ns, exact: integer
 * and fraction of the microseconds converted separately, as devices.us_to_ns), nargs
 * (uint32); id (int64) only for the events with F_ID, in order (flows are a minority).
 * Per argument row, in file order: key (int32 string id), kind (int8, A_* in _kscan.h), value
 * (int64: the integer, bool 0/1, float64 bits, or string id). is_key: one byte per string,
 * 1 for the strings used as argument keys.
 * F_BAD marks an event the scanner cannot represent (a field of an unexpected type, an integer
 * beyond int64, a repeated key, more than 3 decimals in a time, ...): the caller falls back.
 * The JSON scanning itself is in _kscan_json.c.
 */
#include "_kscan.h"

/* A column handed to Python without a copy: owns the scanner's buffer, exposes it through the
 * buffer protocol (numpy.frombuffer reads it in place; writable, so that kept_args can write
 * the kept rows over the scanned ones) and frees it when released. */
typedef struct {
    PyObject_HEAD
    Buf buf;
} Block;

static int block_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Block *block = (Block *)self;
    return PyBuffer_FillInfo(view, self, block->buf.data, block->buf.len, 0, flags);
}

static void block_dealloc(PyObject *self) {
    kscan_buf_free(&((Block *)self)->buf);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs block_as_buffer = {block_getbuffer, NULL};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stepscope.xspace.kineto._kscan.Block",
    .tp_basicsize = sizeof(Block),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = block_dealloc,
    .tp_as_buffer = &block_as_buffer,
};

static PyObject *take(Buf *b) {
    Block *block = PyObject_New(Block, &BlockType);
    if (!block) return NULL;
    /* Give back what doubling reserved beyond the data (never resident, but mapped). */
    kscan_buf_shrink(b);
    block->buf = *b;
    *b = (Buf){0};
    return (PyObject *)block;
}

/* The scan's result (see the module comment) from a complete stream; NULL with an error set. */
static PyObject *result_of(Stream *st) {
    Out *o = &st->o;
    Table *t = &st->s.table;
    Buf *bufs[] = {&o->ph, &o->flags, &o->cat, &o->name, &o->pid, &o->tid, &o->ts, &o->dur,
                   &o->id, &o->nargs, &o->key, &o->kind, &o->value};
    const char *names[] = {"ph", "flags", "cat", "name", "pid", "tid", "ts", "dur", "id",
                           "nargs", "key", "kind", "value"};
    PyObject *result = NULL;
    PyObject *strings = PyList_New(t->count);
    PyObject *columns = PyDict_New();
    PyObject *header = PyBytes_FromStringAndSize(st->header.data, st->header.len);
    int failed = !strings || !columns || !header;
    for (Py_ssize_t i = 0; !failed && i < t->count; i++) {
        Entry *e = &t->entries[i];
        PyObject *text = PyBytes_FromStringAndSize(t->arena.data + e->off, e->len);
        if (!text) failed = 1;
        else PyList_SET_ITEM(strings, i, text);
    }
    for (size_t i = 0; !failed && i < sizeof(bufs) / sizeof(bufs[0]); i++) {
        PyObject *bytes = take(bufs[i]);
        if (!bytes || PyDict_SetItemString(columns, names[i], bytes)) failed = 1;
        Py_XDECREF(bytes);
    }
    PyObject *keys = failed ? NULL : PyBytes_FromStringAndSize(NULL, t->count);
    if (!keys) failed = 1;
    for (Py_ssize_t i = 0; !failed && i < t->count; i++)
        PyBytes_AS_STRING(keys)[i] = (char)t->entries[i].is_key;
    if (!failed) failed = PyDict_SetItemString(columns, "is_key", keys) != 0;
    Py_XDECREF(keys);
    if (!failed) result = PyTuple_Pack(3, header, strings, columns);
    Py_XDECREF(header);
    Py_XDECREF(strings);
    Py_XDECREF(columns);
    return result;
}

static void stream_free(Stream *st) {
    Out *o = &st->o;
    Buf *bufs[] = {&o->ph, &o->flags, &o->cat, &o->name, &o->pid, &o->tid, &o->ts, &o->dur,
                   &o->id, &o->nargs, &o->key, &o->kind, &o->value, &st->header,
                   &st->s.table.arena};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) kscan_buf_free(bufs[i]);
    free(st->s.table.entries);
    free(st->s.table.slots);
}

/* Reads readinto(memoryview) -> int into the window (a bytearray) after its first `len`
 * bytes. The window is a Python object so that a reader that keeps a view of it keeps it
 * alive (and the window then cannot grow: BufferError), never a view of freed memory. */
static Py_ssize_t read_more(PyObject *readinto, PyObject *window, Py_ssize_t len) {
    Py_ssize_t cap = PyByteArray_GET_SIZE(window);
    PyObject *whole = PyMemoryView_FromObject(window);
    if (!whole) return -1;
    PyObject *view = PySequence_GetSlice(whole, len, cap);
    Py_DECREF(whole);
    if (!view) return -1;
    PyObject *got = PyObject_CallOneArg(readinto, view);
    Py_DECREF(view);
    if (!got) return -1;
    Py_ssize_t n = PyLong_AsSsize_t(got);
    Py_DECREF(got);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 0 || n > cap - len) {
        PyErr_SetString(PyExc_ValueError, "readinto returned a size outside its buffer");
        return -1;
    }
    return n;
}

/*
 * scan_stream(readinto, limit, window): the columns (see the module comment) of the document
 * read through readinto (a file's, or anything that fills a memoryview and returns the byte
 * count, 0 at the end) in windows of `window` bytes (grown for a longer event): the text is
 * never held whole. An int instead of the tuple: the bytes the columns would need (twice
 * their size, with what routing makes of them) once that passes limit.
 */
static PyObject *scan_stream(PyObject *self, PyObject *args) {
    PyObject *readinto;
    Py_ssize_t limit, cap;
    if (!PyArg_ParseTuple(args, "Onn", &readinto, &limit, &cap)) return NULL;
    if (cap < 16) cap = 16;
    Stream st = {0};
    PyObject *result = NULL;
    Py_ssize_t len = 0;
    PyObject *window = PyByteArray_FromStringAndSize(NULL, cap);
    if (!window) goto done;
    for (int final = 0;;) {
        Py_ssize_t n = read_more(readinto, window, len);
        if (n < 0) goto done;
        final = n == 0;
        len += n;
        int rc;
        const uint8_t *text = (const uint8_t *)PyByteArray_AS_STRING(window);
        Py_BEGIN_ALLOW_THREADS
        rc = kscan_feed(&st, text, len, final);
        Py_END_ALLOW_THREADS
        if (st.s.oom) {
            PyErr_NoMemory();
            goto done;
        }
        if (rc < 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (rc == 0) break;
        Py_ssize_t needed = 2 * kscan_out_bytes(&st.o);
        if (needed > limit) {
            result = PyLong_FromSsize_t(needed);
            goto done;
        }
        Py_ssize_t used = (const uint8_t *)st.s.p - text;
        memmove(PyByteArray_AS_STRING(window), text + used, (size_t)(len - used));
        len -= used;
        /* one unit longer than the window: grow it (BufferError if a reader kept a view) */
        if (len == cap && PyByteArray_Resize(window, cap * 2) < 0) goto done;
        cap = PyByteArray_GET_SIZE(window);
    }
    result = result_of(&st);
done:
    Py_XDECREF(window);
    stream_free(&st);
    return result;
}

/*
 * innermost(op_start, op_end, times) -> int64 bytes: per time, the index of the innermost op
 * open at that time (-1 for none), walking a stack as memory._innermost_ops does. Ops are
 * sorted by (start, -end), times ascending; all int64 arrays.
 */
static PyObject *innermost(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    Py_buffer v[3];
    if (!PyArg_ParseTuple(args, "OOO", &objs[0], &objs[1], &objs[2])) return NULL;
    for (int k = 0; k < 3; k++) {
        if (native_array(objs[k], &v[k], 8, 0, "innermost")) {
            while (k--) PyBuffer_Release(&v[k]);
            return NULL;
        }
    }
    Py_buffer starts = v[0], ends = v[1], times = v[2];
    Py_ssize_t n_ops = starts.len / 8, n = times.len / 8;
    PyObject *out = NULL;
    int64_t *stack = NULL;
    if (ends.len / 8 != n_ops) {
        PyErr_SetString(PyExc_ValueError, "op_start and op_end differ in length");
        goto done;
    }
    stack = malloc((size_t)(n_ops ? n_ops : 1) * sizeof(int64_t));
    out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!stack || !out) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *s = starts.buf, *e = ends.buf, *t = times.buf;
    int64_t *result = (int64_t *)PyBytes_AS_STRING(out);
    Py_ssize_t depth = 0, next = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t when = t[i];
        while (next < n_ops && s[next] <= when) {
            while (depth && e[stack[depth - 1]] < s[next]) depth--;
            stack[depth++] = next++;
        }
        while (depth && e[stack[depth - 1]] < when) depth--;
        result[i] = depth ? stack[depth - 1] : -1;
    }
done:
    free(stack);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&times);
    return out;
}

/*
 * kept_args(nargs, event_class, arg_key, arg_kind, arg_value, kept, key_lut)
 *     -> (count, key, kind, value)
 * The argument rows an event keeps, in one pass over the rows (fast_stats.StatRows._args
 * without a mask, an event per row or masked copies: 0.7M rows in about 2 ms against 13 ms).
 * Per event: nargs (uint32) rows, its class event_class (int8, 0..2); per row: arg_key
 * (int32 string id), arg_kind (int8), arg_value (int64); kept: bool per (class, key), row
 * major over the string ids; key_lut: int32 output key per string id. A row is kept when
 * kept[class][key] and its kind is not A_NULL. count: int64 kept rows per event; key
 * (key_lut of the row's key, int32), kind (int8) and value (int64) per kept row, in row order.
 * All outputs are bytearrays (numpy reads them in place, writable).
 * kept_args(..., key_lut, True) -> (count, m): the kept rows written over the first m rows of
 * arg_key, arg_kind and arg_value themselves (writable buffers asked), which the caller no
 * longer reads as scanned: a kept row goes to a row at or before its own, already read, so no
 * new memory is touched for them (decision 451: the import's peak, its page faults).
 */
static PyObject *kept_args(PyObject *self, PyObject *args) {
    static const Py_ssize_t sizes[7] = {4, 1, 4, 1, 8, 1, 4};
    PyObject *objs[7];
    Py_buffer v[7];
    int in_place = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOO|p", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &in_place))
        return NULL;
    for (int k = 0; k < 7; k++) {
        if (native_array(objs[k], &v[k], sizes[k], in_place && k >= 2 && k <= 4, "kept_args")) {
            while (k--) PyBuffer_Release(&v[k]);
            return NULL;
        }
    }
    Py_buffer nargs = v[0], classes = v[1], keys = v[2], kinds = v[3], values = v[4],
              kept = v[5], lut = v[6];
    PyObject *count = NULL, *out_key = NULL, *out_kind = NULL, *out_value = NULL, *result = NULL;
    Py_ssize_t n = nargs.len / 4, rows = keys.len / 4, n_ids = lut.len / 4, m = 0, row = 0;
    if (classes.len != n || kinds.len != rows || values.len / 8 != rows ||
        kept.len / 3 != n_ids || kept.len % 3) {
        PyErr_SetString(PyExc_ValueError, "kept_args: columns of different lengths");
        goto done;
    }
    count = PyByteArray_FromStringAndSize(NULL, n * 8);
    if (!in_place) {
        out_key = PyByteArray_FromStringAndSize(NULL, rows * 4);
        out_kind = PyByteArray_FromStringAndSize(NULL, rows);
        out_value = PyByteArray_FromStringAndSize(NULL, rows * 8);
    }
    if (!count || (!in_place && (!out_key || !out_kind || !out_value))) goto done;
    const uint32_t *per_event = nargs.buf;
    const int8_t *cls = classes.buf, *kind = kinds.buf;
    const int32_t *key = keys.buf, *key_out = lut.buf;
    const int64_t *value = values.buf;
    const uint8_t *keep = kept.buf;
    int64_t *counts = (int64_t *)PyByteArray_AS_STRING(count);
    /* In place: kept row m is written over row m or an earlier one, already read. */
    int32_t *ok = in_place ? (int32_t *)keys.buf : (int32_t *)PyByteArray_AS_STRING(out_key);
    int8_t *okind = in_place ? (int8_t *)kinds.buf : (int8_t *)PyByteArray_AS_STRING(out_kind);
    int64_t *ovalue =
        in_place ? (int64_t *)values.buf : (int64_t *)PyByteArray_AS_STRING(out_value);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t c = 0;
        Py_ssize_t end = row + (Py_ssize_t)per_event[i];
        if (end > rows || cls[i] < 0 || cls[i] > 2) {
            PyErr_SetString(PyExc_ValueError, "kept_args: rows or classes out of range");
            goto done;
        }
        const uint8_t *table = keep + (Py_ssize_t)cls[i] * n_ids;
        for (; row < end; row++) {
            int32_t k = key[row];
            if (k < 0 || k >= n_ids) {
                PyErr_SetString(PyExc_ValueError, "kept_args: a key beyond the string ids");
                goto done;
            }
            if (!table[k] || kind[row] == A_NULL) continue;
            ok[m] = key_out[k];
            okind[m] = kind[row];
            ovalue[m] = value[row];
            m++;
            c++;
        }
        counts[i] = c;
    }
    if (in_place) {
        result = Py_BuildValue("(On)", count, m);
        goto done;
    }
    if (PyByteArray_Resize(out_key, m * 4) < 0 || PyByteArray_Resize(out_kind, m) < 0 ||
        PyByteArray_Resize(out_value, m * 8) < 0)
        goto done;
    result = PyTuple_Pack(4, count, out_key, out_kind, out_value);
done:
    Py_XDECREF(count);
    Py_XDECREF(out_key);
    Py_XDECREF(out_kind);
    Py_XDECREF(out_value);
    PyBuffer_Release(&nargs);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&values);
    PyBuffer_Release(&kept);
    PyBuffer_Release(&lut);
    return result;
}

/*
 * key_rows(nargs, arg_key, slot, n_slots) -> (rows, owners, bounds)
 * The argument rows of the keys the router looks up, grouped by key, in one counting pass
 * (scan.ScannedTrace's key index without a mask, a sort and an event per row: 0.7M rows).
 * slot: int8 per string id, the key's group (-1: not indexed). rows and owners (the event of
 * each row), int32, hold group 0's rows, then group 1's..., each ascending (fewer than 2**31
 * rows: the caller checks);
 * bounds (int64, n_slots + 1) where each group starts.
 */
static PyObject *key_rows(PyObject *self, PyObject *args) {
    PyObject *objs[3];
    Py_buffer v[3];
    Py_ssize_t n_slots;
    if (!PyArg_ParseTuple(args, "OOOn", &objs[0], &objs[1], &objs[2], &n_slots)) return NULL;
    if (n_slots < 0 || n_slots > 127) { /* slot is int8 */
        PyErr_SetString(PyExc_ValueError, "key_rows: n_slots out of range");
        return NULL;
    }
    static const Py_ssize_t sizes[3] = {4, 4, 1};
    for (int k = 0; k < 3; k++) {
        if (native_array(objs[k], &v[k], sizes[k], 0, "key_rows")) {
            while (k--) PyBuffer_Release(&v[k]);
            return NULL;
        }
    }
    Py_buffer nargs = v[0], keys = v[1], slots = v[2];
    PyObject *rows_out = NULL, *owners_out = NULL, *bounds_out = NULL, *result = NULL;
    Py_ssize_t n = nargs.len / 4, n_rows = keys.len / 4, n_ids = slots.len, total = 0;
    Py_ssize_t *fill = calloc((size_t)n_slots + 1, sizeof(Py_ssize_t));
    const int32_t *key = keys.buf;
    const int8_t *slot = slots.buf;
    const uint32_t *per_event = nargs.buf;
    if (!fill) {
        PyErr_NoMemory();
        goto done;
    }
    if (n_rows > INT32_MAX || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "key_rows: 2**31 rows or events or more");
        goto done;
    }
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        int32_t k = key[r];
        if (k < 0 || k >= n_ids || slot[k] >= n_slots) {
            PyErr_SetString(PyExc_ValueError, "key_rows: a key or slot out of range");
            goto done;
        }
        if (slot[k] >= 0) fill[slot[k] + 1]++;
    }
    bounds_out = PyBytes_FromStringAndSize(NULL, (n_slots + 1) * 8);
    if (!bounds_out) goto done;
    int64_t *bounds = (int64_t *)PyBytes_AS_STRING(bounds_out);
    for (Py_ssize_t g = 0; g <= n_slots; g++) {
        total += fill[g];
        bounds[g] = total;
        fill[g] = total;  /* the next free position of group g (fill[g] counted group g - 1) */
    }
    rows_out = PyBytes_FromStringAndSize(NULL, total * 4);
    owners_out = PyBytes_FromStringAndSize(NULL, total * 4);
    if (!rows_out || !owners_out) goto done;
    int32_t *rows = (int32_t *)PyBytes_AS_STRING(rows_out);
    int32_t *owners = (int32_t *)PyBytes_AS_STRING(owners_out);
    Py_ssize_t row = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t end = row + (Py_ssize_t)per_event[i];
        if (end > n_rows) {
            PyErr_SetString(PyExc_ValueError, "key_rows: more rows per event than rows");
            goto done;
        }
        for (; row < end; row++) {
            int g = slot[key[row]];
            if (g < 0) continue;
            Py_ssize_t at = fill[g]++;
            rows[at] = (int32_t)row;
            owners[at] = (int32_t)i;
        }
    }
    result = PyTuple_Pack(3, rows_out, owners_out, bounds_out);
done:
    free(fill);
    Py_XDECREF(rows_out);
    Py_XDECREF(owners_out);
    Py_XDECREF(bounds_out);
    PyBuffer_Release(&nargs);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&slots);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_stream", scan_stream, METH_VARARGS,
     "Kineto trace JSON, read in windows -> columns (see above)."},
    {"innermost", innermost, METH_VARARGS, "Innermost open op per time (see above)."},
    {"kept_args", kept_args, METH_VARARGS, "The argument rows events keep (see above)."},
    {"key_rows", key_rows, METH_VARARGS, "Argument rows grouped by key (see above)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kscan", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kscan(void) {
    kscan_init();
    if (PyType_Ready(&BlockType) < 0) return NULL;
    return stamped(PyModule_Create(&module));
}
