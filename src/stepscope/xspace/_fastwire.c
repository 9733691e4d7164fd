/*
 * Decode serialized XSpace bytes straight into columns, without creating a Python object
 * per event. Used by stepscope.xspace.wire; a pure-Python path (protobuf) gives the same
 * result when this module is not built.
 *
 * Why C: a 5M-event profile must load at >= 2M events/s in under 100 bytes per event; a
 * protobuf parse alone allocates more than that and iterating events from Python costs
 * about a microsecond each.
 *
 * decode(buffer, max_bytes=-1) -> (space_header: bytes,
 *                    planes: list[(plane_header: bytes, lines: list[line])],
 *                    columns: dict[str, bytearray], strings: list[bytes], aggregated: int)
 * line = (id, display_id, name: bytes, display_name: bytes, timestamp_ns, duration_ps,
 *         first_event, event_count)
 * "header" bytes are every field of the message except the repeated child (planes / lines),
 * copied verbatim so protobuf can parse the small remainder.
 *
 * max_bytes >= 0 bounds the memory the columns (and the model built from them) will take,
 * checked after the counting pass and before anything is allocated: a crafted file of empty
 * events inflates 2 wire bytes to 96 bytes of columns and model (measured). Over the bound, MemoryError is raised
 * with args (message, bytes_needed).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { KIND_NONE = 0, KIND_INT = 1, KIND_UINT = 2, KIND_DOUBLE = 3, KIND_STR = 4,
       KIND_BYTES = 5, KIND_REF = 6 };

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

static int read_varint(Cursor *c, uint64_t *out) {
    uint64_t value = 0;
    int shift = 0;
    while (c->p < c->end && shift < 64) {
        uint8_t byte = *c->p++;
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* Skip one field's value of the given wire type. */
static int skip_value(Cursor *c, uint32_t wire) {
    uint64_t n;
    switch (wire) {
    case 0: return read_varint(c, &n);
    case 1: if (c->end - c->p < 8) return -1; c->p += 8; return 0;
    case 2:
        if (read_varint(c, &n) || (uint64_t)(c->end - c->p) < n) return -1;
        c->p += n;
        return 0;
    case 5: if (c->end - c->p < 4) return -1; c->p += 4; return 0;
    default: return -1;
    }
}

/* Read a length-delimited payload into a sub-cursor. */
static int read_len(Cursor *c, Cursor *sub) {
    uint64_t n;
    if (read_varint(c, &n) || (uint64_t)(c->end - c->p) < n) return -1;
    sub->p = c->p;
    sub->end = c->p + n;
    c->p += n;
    return 0;
}

typedef struct {
    /* counts from pass 1 */
    Py_ssize_t n_events, n_stats;
    /* outputs filled in pass 2 */
    int64_t *ev_meta, *ev_offset_ps, *ev_duration_ps, *ev_stat_start;
    int32_t *ev_line;
    int64_t *st_meta, *st_value;
    int8_t *st_kind;
    Py_ssize_t ev, st, line_index;
    long long aggregated;
    PyObject *intern;   /* dict bytes -> int */
    PyObject *strings;  /* list of bytes */
    int fill;           /* 0 = counting pass, 1 = filling pass */
} State;

static int intern_bytes(State *s, const uint8_t *p, Py_ssize_t n, int64_t *out) {
    PyObject *key = PyBytes_FromStringAndSize((const char *)p, n);
    if (!key) return -1;
    PyObject *found = PyDict_GetItemWithError(s->intern, key);
    if (found) {
        *out = PyLong_AsLongLong(found);
        Py_DECREF(key);
        return 0;
    }
    if (PyErr_Occurred()) { Py_DECREF(key); return -1; }
    Py_ssize_t id = PyList_GET_SIZE(s->strings);
    PyObject *value = PyLong_FromSsize_t(id);
    if (!value || PyDict_SetItem(s->intern, key, value) || PyList_Append(s->strings, key)) {
        Py_XDECREF(value);
        Py_DECREF(key);
        return -1;
    }
    Py_DECREF(value);
    Py_DECREF(key);
    *out = id;
    return 0;
}

static int decode_stat(State *s, Cursor c) {
    uint64_t tag, v;
    int64_t meta = 0, value = 0;
    int8_t kind = KIND_NONE;
    while (c.p < c.end) {
        if (read_varint(&c, &tag)) return -1;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (field == 1 && wire == 0) {
            if (read_varint(&c, &v)) return -1;
            meta = (int64_t)v;
        } else if (field == 2 && wire == 1) {
            if (c.end - c.p < 8) return -1;
            memcpy(&value, c.p, 8);
            c.p += 8;
            kind = KIND_DOUBLE;
        } else if ((field == 3 || field == 4 || field == 7) && wire == 0) {
            if (read_varint(&c, &v)) return -1;
            value = (int64_t)v;
            kind = field == 3 ? KIND_UINT : (field == 4 ? KIND_INT : KIND_REF);
        } else if ((field == 5 || field == 6) && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub)) return -1;
            kind = field == 5 ? KIND_STR : KIND_BYTES;
            if (s->fill && intern_bytes(s, sub.p, sub.end - sub.p, &value)) return -1;
        } else if (skip_value(&c, wire)) {
            return -1;
        }
    }
    if (s->fill) {
        s->st_meta[s->st] = meta;
        s->st_kind[s->st] = kind;
        s->st_value[s->st] = value;
    }
    s->st++;
    return 0;
}

static int decode_event(State *s, Cursor c) {
    uint64_t tag, v;
    int64_t meta = 0, offset = 0, duration = 0;
    if (s->fill) s->ev_stat_start[s->ev] = s->st;
    while (c.p < c.end) {
        if (read_varint(&c, &tag)) return -1;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (wire == 0 && (field == 1 || field == 2 || field == 3 || field == 5)) {
            if (read_varint(&c, &v)) return -1;
            if (field == 1) meta = (int64_t)v;
            else if (field == 2) offset = (int64_t)v;
            else if (field == 3) duration = (int64_t)v;
            else { offset = 0; if (!s->fill) s->aggregated++; }
        } else if (field == 4 && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub) || decode_stat(s, sub)) return -1;
        } else if (skip_value(&c, wire)) {
            return -1;
        }
    }
    if (s->fill) {
        s->ev_meta[s->ev] = meta;
        s->ev_offset_ps[s->ev] = offset;
        s->ev_duration_ps[s->ev] = duration;
        s->ev_line[s->ev] = (int32_t)s->line_index;
    }
    s->ev++;
    return 0;
}

/* Returns a new tuple describing the line in the filling pass, Py_None in counting pass. */
static PyObject *decode_line(State *s, Cursor c) {
    uint64_t tag, v;
    int64_t id = 0, display_id = 0, ts = 0, dur = 0;
    Cursor name = {NULL, NULL}, display_name = {NULL, NULL};
    Py_ssize_t first = s->ev;
    while (c.p < c.end) {
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
            if (read_len(&c, &sub) || decode_event(s, sub)) return NULL;
        } else if (skip_value(&c, wire)) {
            return NULL;
        }
    }
    s->line_index++;
    if (!s->fill) Py_RETURN_NONE;
    return Py_BuildValue("(LLy#y#LLnn)", (long long)id, (long long)display_id,
                         name.p ? (const char *)name.p : "", (Py_ssize_t)(name.end - name.p),
                         display_name.p ? (const char *)display_name.p : "",
                         (Py_ssize_t)(display_name.end - display_name.p),
                         (long long)ts, (long long)dur, first, s->ev - first);
}

/* Walk a message, handing fields numbered `child` to `on_child` and copying the rest. */
static PyObject *split_message(State *s, Cursor c, uint32_t child, PyObject *children,
                               PyObject *(*on_child)(State *, Cursor)) {
    PyObject *header = PyByteArray_FromStringAndSize(NULL, 0);
    if (!header) return NULL;
    uint64_t tag;
    while (c.p < c.end) {
        const uint8_t *field_start = c.p;
        if (read_varint(&c, &tag)) goto corrupt;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (field == child && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub)) goto corrupt;
            PyObject *item = on_child(s, sub);
            if (!item) goto fail;
            if (s->fill && PyList_Append(children, item)) { Py_DECREF(item); goto fail; }
            Py_DECREF(item);
        } else {
            if (skip_value(&c, wire)) goto corrupt;
            if (s->fill) {
                Py_ssize_t old = PyByteArray_GET_SIZE(header), add = c.p - field_start;
                if (PyByteArray_Resize(header, old + add)) goto fail;
                memcpy(PyByteArray_AS_STRING(header) + old, field_start, add);
            }
        }
    }
    return header;
corrupt:
fail:
    /* Children report corrupt data by returning NULL without an exception. */
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "truncated or corrupt protobuf data");
    Py_DECREF(header);
    return NULL;
}

static PyObject *decode_plane(State *s, Cursor c) {
    PyObject *lines = PyList_New(0);
    if (!lines) return NULL;
    PyObject *header = split_message(s, c, 3, lines, decode_line);
    if (!header) { Py_DECREF(lines); return NULL; }
    PyObject *result = Py_BuildValue("(NN)", header, lines);
    return result;
}

static PyObject *new_column(Py_ssize_t count, Py_ssize_t width, void **data) {
    PyObject *column = PyByteArray_FromStringAndSize(NULL, count * width);
    if (column) *data = PyByteArray_AS_STRING(column);
    return column;
}

/* Bytes per event and per stat of the decoded columns plus the model's mapped copies. */
#define BYTES_PER_EVENT 96
#define BYTES_PER_STAT 24

static PyObject *decode(PyObject *self, PyObject *args) {
    PyObject *arg;
    long long max_bytes = -1;
    if (!PyArg_ParseTuple(args, "O|L", &arg, &max_bytes)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Cursor all = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    State s;
    memset(&s, 0, sizeof(s));
    PyObject *planes = NULL, *header = NULL, *columns = NULL, *result = NULL;

    /* Pass 1: count events and stats. */
    header = split_message(&s, all, 1, NULL, decode_plane);
    if (!header) goto done;
    Py_CLEAR(header);

    /* Pass 2: fill. */
    Py_ssize_t n_ev = s.ev, n_st = s.st;
    long long aggregated = s.aggregated;
    long long needed = (long long)n_ev * BYTES_PER_EVENT + (long long)n_st * BYTES_PER_STAT;
    if (max_bytes >= 0 && needed > max_bytes) {
        PyObject *info = Py_BuildValue("(sL)", "decoded profile exceeds the memory bound", needed);
        if (info) {
            PyErr_SetObject(PyExc_MemoryError, info);
            Py_DECREF(info);
        }
        goto done;
    }
    memset(&s, 0, sizeof(s));
    s.fill = 1;
    s.intern = PyDict_New();
    s.strings = PyList_New(0);
    planes = PyList_New(0);
    columns = PyDict_New();
    if (!s.intern || !s.strings || !planes || !columns) goto done;
    struct { const char *name; Py_ssize_t count, width; void **data; } spec[] = {
        {"ev_meta", n_ev, 8, (void **)&s.ev_meta},
        {"ev_offset_ps", n_ev, 8, (void **)&s.ev_offset_ps},
        {"ev_duration_ps", n_ev, 8, (void **)&s.ev_duration_ps},
        {"ev_stat_start", n_ev + 1, 8, (void **)&s.ev_stat_start},
        {"ev_line", n_ev, 4, (void **)&s.ev_line},
        {"st_meta", n_st, 8, (void **)&s.st_meta},
        {"st_value", n_st, 8, (void **)&s.st_value},
        {"st_kind", n_st, 1, (void **)&s.st_kind},
    };
    for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
        PyObject *column = new_column(spec[i].count, spec[i].width, spec[i].data);
        if (!column || PyDict_SetItemString(columns, spec[i].name, column)) {
            Py_XDECREF(column);
            goto done;
        }
        Py_DECREF(column);
    }
    header = split_message(&s, all, 1, planes, decode_plane);
    if (!header) goto done;
    if (s.ev != n_ev || s.st != n_st) {
        PyErr_SetString(PyExc_ValueError, "inconsistent event count between passes");
        goto done;
    }
    s.ev_stat_start[n_ev] = n_st;
    result = Py_BuildValue("(OOOOL)", header, planes, columns, s.strings, aggregated);
done:
    Py_XDECREF(header);
    Py_XDECREF(planes);
    Py_XDECREF(columns);
    Py_XDECREF(s.intern);
    Py_XDECREF(s.strings);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Decode XSpace bytes into columns (see module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastwire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastwire(void) { return PyModule_Create(&module); }
