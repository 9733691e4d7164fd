/*
 * The small messages of an XSpace (what decode() returns as header bytes) parsed without
 * protobuf, so opening an .xplane.pb file does not import it (about 11 ms of CPU per
 * process). stepscope.xspace.wire builds `headers.SpaceHeader` / `PlaneHeader` from:
 *
 * space_header(bytes) -> (hostnames: list[str], errors: list[str], warnings: list[str])
 * plane_header(bytes) -> (id, name, event_metadata, stat_metadata, stats)
 *   event_metadata: list[(key, id, name, display_name, stats)]   (map entries in file order)
 *   stat_metadata:  list[(key, id, name)]
 *   stats:          list[(metadata_id, field, value)], field = the XStat oneof's number
 *                   (2 double, 3 uint64, 4 int64, 5 str, 6 bytes, 7 ref; 0 none)
 *
 * Protobuf's rules where they matter: the last of repeated scalars and of a oneof wins, map
 * entries without a key or value read as 0 / an empty message, strings must be UTF-8
 * (UnicodeDecodeError, a ValueError, as protobuf rejects them).
 */
#include "_fastwire.h"

#include <string.h>

static PyObject *corrupt(void) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, CORRUPT);
    return NULL;
}

static PyObject *text(Cursor s) {
    return PyUnicode_DecodeUTF8((const char *)s.p, s.end - s.p, "strict");
}

/* A field's tag; field numbers outside 1..2^29-1 are invalid (protobuf rejects them). */
static int read_tag(Cursor *c, uint64_t *tag) {
    return read_varint(c, tag) || (*tag >> 3) == 0 || (*tag >> 3) > 0x1FFFFFFF ? -1 : 0;
}

/* Packed varints (child ids, unused): each must be complete. */
static int check_packed(Cursor c) {
    uint64_t v;
    while (c.p < c.end)
        if (read_varint(&c, &v)) return -1;
    return 0;
}

/* Decode the string `s` into *out, replacing what it held: every occurrence of a repeated
 * singular field is checked, the last one is kept (protobuf's rules). */
static int keep_text(PyObject **out, Cursor s) {
    PyObject *decoded = text(s);
    if (!decoded) return -1;
    Py_XSETREF(*out, decoded);
    return 0;
}

/* One XStat: (metadata_id, field, value). */
static PyObject *header_stat(Cursor c) {
    uint64_t tag, v, meta = 0;
    int field_set = 0;
    PyObject *value = NULL;
    while (c.p < c.end) {
        if (read_tag(&c, &tag)) goto fail;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        PyObject *got = NULL;
        if (field == 1 && wire == 0) {
            if (read_varint(&c, &meta)) goto fail;
            continue;
        } else if (field == 2 && wire == 1) {
            double d;
            if (c.end - c.p < 8) goto fail;
            memcpy(&d, c.p, 8);
            c.p += 8;
            got = PyFloat_FromDouble(d);
        } else if ((field == 3 || field == 7) && wire == 0) {
            if (read_varint(&c, &v)) goto fail;
            got = PyLong_FromUnsignedLongLong(v);
        } else if (field == 4 && wire == 0) {
            if (read_varint(&c, &v)) goto fail;
            got = PyLong_FromLongLong((long long)v);
        } else if ((field == 5 || field == 6) && wire == 2) {
            Cursor s;
            if (read_len(&c, &s)) goto fail;
            got = field == 5 ? text(s)
                             : PyBytes_FromStringAndSize((const char *)s.p, s.end - s.p);
        } else {
            if (skip_value(&c, wire)) goto fail;
            continue;
        }
        if (!got) goto fail;
        Py_XSETREF(value, got);
        field_set = (int)field;
    }
    if (!value) {
        Py_INCREF(Py_None);
        value = Py_None;
    }
    return Py_BuildValue("(KiN)", (unsigned long long)meta, field_set, value);
fail:
    Py_XDECREF(value);
    return corrupt();
}

/* Append stat(sub) to list; -1 on error. */
static int add_stat(PyObject *list, Cursor sub) {
    PyObject *item = header_stat(sub);
    if (!item) return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

/* XEventMetadata (event = 1) or XStatMetadata (event = 0) -> (id, name[, display, stats]). */
static PyObject *metadata(Cursor c, int event) {
    uint64_t tag, id = 0;
    Cursor sub;
    PyObject *name_text = PyUnicode_FromString(""), *display_text = PyUnicode_FromString("");
    PyObject *stats = event ? PyList_New(0) : NULL;
    if ((event && !stats) || !name_text || !display_text) goto fail;
    while (c.p < c.end) {
        if (read_tag(&c, &tag)) goto fail;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (field == 1 && wire == 0) {
            if (read_varint(&c, &id)) goto fail;
        } else if (field == 2 && wire == 2) {
            if (read_len(&c, &sub) || keep_text(&name_text, sub)) goto fail;
        } else if (event && field == 4 && wire == 2) {
            if (read_len(&c, &sub) || keep_text(&display_text, sub)) goto fail;
        } else if (event && field == 5 && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub) || add_stat(stats, sub)) goto fail;
        } else if (event && field == 6 && wire == 2) { /* child ids, packed: unused */
            Cursor sub;
            if (read_len(&c, &sub) || check_packed(sub)) goto fail;
        } else if (!event && field == 3 && wire == 2) { /* description: unused, but UTF-8 */
            Cursor sub;
            PyObject *unused = NULL;
            if (read_len(&c, &sub) || !(unused = text(sub))) goto fail;
            Py_DECREF(unused);
        } else if (skip_value(&c, wire)) {
            goto fail;
        }
    }
    if (!event) {
        Py_DECREF(display_text);
        return Py_BuildValue("(LN)", (long long)id, name_text);
    }
    return Py_BuildValue("(LNNN)", (long long)id, name_text, display_text, stats);
fail:
    Py_XDECREF(name_text);
    Py_XDECREF(display_text);
    Py_XDECREF(stats);
    return corrupt();
}

/* A map<int64, message> entry -> (key, *metadata(value)); None for an entry with other
 * fields, which protobuf keeps aside as unknown data instead of in the map. */
static PyObject *map_entry(Cursor c, int event) {
    uint64_t tag, key = 0;
    Cursor value = {c.p, c.p};
    int foreign = 0, values = 0;
    PyObject *joined = NULL; /* several values merge: parse their bytes end to end */
    while (c.p < c.end) {
        if (read_tag(&c, &tag)) goto fail;
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (field == 1 && wire == 0) {
            if (read_varint(&c, &key)) goto fail;
        } else if (field == 2 && wire == 2) {
            Cursor sub;
            if (read_len(&c, &sub)) goto fail;
            if (values++ == 0) {
                value = sub;
                continue;
            }
            if (!joined)
                joined = PyBytes_FromStringAndSize((const char *)value.p, value.end - value.p);
            PyObject *more = PyBytes_FromStringAndSize((const char *)sub.p, sub.end - sub.p);
            if (!joined || !more) {
                Py_XDECREF(more);
                goto fail;
            }
            PyBytes_ConcatAndDel(&joined, more);
            if (!joined) goto fail;
            value.p = (const uint8_t *)PyBytes_AS_STRING(joined);
            value.end = value.p + PyBytes_GET_SIZE(joined);
        } else if (skip_value(&c, wire)) {
            goto fail;
        } else {
            foreign = 1;
        }
    }
    PyObject *parsed = metadata(value, event); /* checked even when dropped, as protobuf does */
    Py_XDECREF(joined);
    if (!parsed) return NULL;
    if (foreign) {
        Py_DECREF(parsed);
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(parsed);
    PyObject *entry = PyTuple_New(n + 1), *key_obj = PyLong_FromLongLong((long long)key);
    if (!entry || !key_obj) {
        Py_XDECREF(entry);
        Py_XDECREF(key_obj);
        Py_DECREF(parsed);
        return NULL;
    }
    PyTuple_SET_ITEM(entry, 0, key_obj);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(parsed, i);
        Py_INCREF(item);
        PyTuple_SET_ITEM(entry, i + 1, item);
    }
    Py_DECREF(parsed);
    return entry;
fail:
    Py_XDECREF(joined);
    return corrupt();
}

static PyObject *plane_header(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    uint64_t tag, id = 0;
    PyObject *events = PyList_New(0), *stat_meta = PyList_New(0), *stats = PyList_New(0);
    PyObject *result = NULL, *name_text = PyUnicode_FromString("");
    if (!events || !stat_meta || !stats || !name_text) goto done;
    while (c.p < c.end) {
        if (read_tag(&c, &tag)) { corrupt(); goto done; }
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        Cursor sub;
        if (field == 1 && wire == 0) {
            if (read_varint(&c, &id)) { corrupt(); goto done; }
        } else if (wire == 2 && field >= 2 && field <= 6 && field != 3) {
            if (read_len(&c, &sub)) { corrupt(); goto done; }
            if (field == 2) {
                if (keep_text(&name_text, sub)) goto done;
                continue;
            }
            if (field == 6) {
                if (add_stat(stats, sub)) goto done;
                continue;
            }
            PyObject *entry = map_entry(sub, field == 4);
            if (entry == Py_None) {
                Py_DECREF(entry);
                continue;
            }
            if (!entry || PyList_Append(field == 4 ? events : stat_meta, entry)) {
                Py_XDECREF(entry);
                goto done;
            }
            Py_DECREF(entry);
        } else if (skip_value(&c, wire)) {
            corrupt();
            goto done;
        }
    }
    result = Py_BuildValue("(LOOOO)", (long long)id, name_text, events, stat_meta, stats);
done:
    Py_XDECREF(name_text);
    Py_XDECREF(events);
    Py_XDECREF(stat_meta);
    Py_XDECREF(stats);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *space_header(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    PyObject *lists[3] = {PyList_New(0), PyList_New(0), PyList_New(0)}; /* fields 4, 2, 3 */
    PyObject *result = NULL;
    uint64_t tag;
    if (!lists[0] || !lists[1] || !lists[2]) goto done;
    while (c.p < c.end) {
        if (read_tag(&c, &tag)) { corrupt(); goto done; }
        uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        if (wire == 2 && field >= 2 && field <= 4) {
            Cursor s;
            if (read_len(&c, &s)) { corrupt(); goto done; }
            PyObject *item = text(s);
            if (!item || PyList_Append(lists[field == 4 ? 0 : field - 1], item)) {
                Py_XDECREF(item);
                goto done;
            }
            Py_DECREF(item);
        } else if (skip_value(&c, wire)) {
            corrupt();
            goto done;
        }
    }
    result = PyTuple_Pack(3, lists[0], lists[1], lists[2]);
done:
    for (int i = 0; i < 3; i++) Py_XDECREF(lists[i]);
    PyBuffer_Release(&view);
    return result;
}

PyMethodDef header_methods[] = {
    {"plane_header", plane_header, METH_O, "An XPlane's header bytes as tuples (see source)."},
    {"space_header", space_header, METH_O, "An XSpace's header bytes as tuples (see source)."},
    {NULL, NULL, 0, NULL},
};
