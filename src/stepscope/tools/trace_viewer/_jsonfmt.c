/* Optional accelerator of the Chrome-trace JSON export: writes the text of a chunk of "X"
 * events in one pass. The text is exactly that of the Python path in
 * stepscope/tools/trace_viewer/chrome_text.py (format_events_py), used when this module is not
 * built; tests compare both.
 *
 * events(prefix, start, dur, cats, names, metas, tails, count, comma, keys, kind, ivalue,
 *        tvalue) -> str
 * Per event i (arrays/lists of length n): prefix, start[i] and dur[i] as microseconds with
 * three decimals (",\"dur\":" between), ",\"cat\":" cats[i], ",\"name\":" names[i],
 * ",\"args\":{" metas[i], then its count[i] stat pairs, then tails[i]. Pair j: "," if comma[j],
 * keys[j], ":", then ivalue[j] as int64 (kind 0), as uint64 (kind 1) or tvalue[j] (kind 2).
 * Integer arrays are C-contiguous int64; text lists hold str.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../_native.h"
#include <stdint.h>
#include <string.h>

typedef struct { char *buf; Py_ssize_t len, cap; } Out;

static int grow(Out *o, Py_ssize_t extra) {
    if (o->len + extra <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + extra) cap *= 2;
    char *b = PyMem_Realloc(o->buf, cap);
    if (!b) { PyErr_NoMemory(); return -1; }
    o->buf = b; o->cap = cap;
    return 0;
}

static int put(Out *o, const char *s, Py_ssize_t n) {
    if (n <= 0) return 0; /* the first put may be empty: no memcpy to a NULL buffer */
    if (grow(o, n) < 0) return -1;
    memcpy(o->buf + o->len, s, n); o->len += n;
    return 0;
}

static int put_str(Out *o, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return -1;
    return put(o, u, n);
}

static int put_u64(Out *o, uint64_t v) {
    char tmp[24]; int i = 24;
    do { tmp[--i] = (char)('0' + v % 10); v /= 10; } while (v);
    return put(o, tmp + i, 24 - i);
}

static int put_i64(Out *o, int64_t v) {
    if (v < 0) { if (put(o, "-", 1) < 0) return -1; return put_u64(o, (uint64_t)0 - (uint64_t)v); }
    return put_u64(o, (uint64_t)v);
}

/* Microseconds with three decimals as Python's "%d.%03d" % (ns // 1000, ns % 1000) writes them
 * (floor division: the same text as the reference writer for any input). */
static int put_us(Out *o, int64_t ns) {
    int64_t q = ns / 1000, r = ns % 1000;
    if (r < 0) { q -= 1; r += 1000; }
    if (put_i64(o, q) < 0) return -1;
    char frac[4] = {'.', (char)('0' + r / 100), (char)('0' + r / 10 % 10), (char)('0' + r % 10)};
    return put(o, frac, 4);
}

#define N_INT 5
static PyObject *events(PyObject *self, PyObject *args) {
    PyObject *prefix, *cats, *names, *metas, *tails, *keys, *tvalue, *arr[N_INT];
    /* int arrays: start dur count | comma kind ... ivalue */
    PyObject *ivalue_obj;
    if (!PyArg_ParseTuple(args, "UOOO!O!O!O!OOO!OOO!", &prefix, &arr[0], &arr[1], &PyList_Type, &cats,
                          &PyList_Type, &names, &PyList_Type, &metas, &PyList_Type, &tails, &arr[2],
                          &arr[3], &PyList_Type, &keys, &arr[4], &ivalue_obj, &PyList_Type, &tvalue))
        return NULL;
    Py_buffer v[N_INT + 1];
    int got = 0;
    PyObject *result = NULL;
    Out o = {NULL, 0, 0};
    PyObject *objs[N_INT + 1] = {arr[0], arr[1], arr[2], arr[3], arr[4], ivalue_obj};
    for (; got < N_INT + 1; got++)
        if (native_array(objs[got], &v[got], 8, 0, "events")) goto done;
    Py_ssize_t n = v[0].len / 8, m = v[3].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != n || PyList_GET_SIZE(cats) != n ||
        PyList_GET_SIZE(names) != n || PyList_GET_SIZE(metas) != n || PyList_GET_SIZE(tails) != n ||
        v[4].len / 8 != m || v[5].len / 8 != m || PyList_GET_SIZE(keys) != m ||
        PyList_GET_SIZE(tvalue) != m) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *start = v[0].buf, *dur = v[1].buf, *count = v[2].buf, *comma = v[3].buf,
                  *kind = v[4].buf, *ival = v[5].buf;
    Py_ssize_t pre_n;
    const char *pre = PyUnicode_AsUTF8AndSize(prefix, &pre_n);
    if (!pre) goto done;
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (put(&o, pre, pre_n) < 0 || put_us(&o, start[i]) < 0 || put(&o, ",\"dur\":", 7) < 0 ||
            put_us(&o, dur[i]) < 0 || put(&o, ",\"cat\":", 7) < 0 ||
            put_str(&o, PyList_GET_ITEM(cats, i)) < 0 || put(&o, ",\"name\":", 8) < 0 ||
            put_str(&o, PyList_GET_ITEM(names, i)) < 0 || put(&o, ",\"args\":{", 9) < 0 ||
            put_str(&o, PyList_GET_ITEM(metas, i)) < 0)
            goto done;
        if (count[i] < 0 || count[i] > m - j) { PyErr_SetString(PyExc_ValueError, "bad pair counts"); goto done; }
        for (Py_ssize_t end = j + count[i]; j < end; j++) {
            if ((comma[j] && put(&o, ",", 1) < 0) || put_str(&o, PyList_GET_ITEM(keys, j)) < 0 ||
                put(&o, ":", 1) < 0)
                goto done;
            int rc = kind[j] == 0   ? put_i64(&o, ival[j])
                     : kind[j] == 1 ? put_u64(&o, (uint64_t)ival[j])
                                    : put_str(&o, PyList_GET_ITEM(tvalue, j));
            if (rc < 0) goto done;
        }
        if (put_str(&o, PyList_GET_ITEM(tails, i)) < 0) goto done;
    }
    result = PyUnicode_DecodeUTF8(o.buf ? o.buf : "", o.len, "strict");
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    PyMem_Free(o.buf);
    return result;
}

/* flows(id, cat, pid, tid, ts, cats) -> str: per flow i, a "s" then a "f" event (int64
 * arrays of 2n: [2i] the source, [2i + 1] the destination; id and cat of length n), as
 * chrome_trace._flow_chunks_py writes them; cats[cat[i]] is the category's text. */
static PyObject *flows(PyObject *self, PyObject *args) {
    PyObject *objs[5], *cats;
    if (!PyArg_ParseTuple(args, "OOOOOO!", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &PyList_Type, &cats))
        return NULL;
    Py_buffer v[5];
    int got = 0;
    PyObject *result = NULL;
    Out o = {NULL, 0, 0};
    for (; got < 5; got++)
        if (native_array(objs[got], &v[got], 8, 0, "flows")) goto done;
    Py_ssize_t n = v[0].len / 8;
    if (v[1].len / 8 != n || v[2].len / 8 != 2 * n || v[3].len / 8 != 2 * n || v[4].len / 8 != 2 * n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *id = v[0].buf, *cat = v[1].buf, *pid = v[2].buf, *tid = v[3].buf, *ts = v[4].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (cat[i] < 0 || cat[i] >= PyList_GET_SIZE(cats)) { PyErr_SetString(PyExc_ValueError, "bad flow category"); goto done; }
        PyObject *c = PyList_GET_ITEM(cats, cat[i]);
        for (int end = 0; end < 2; end++) {
            Py_ssize_t k = 2 * i + end;
            if (put(&o, end ? ",\n{\"ph\":\"f\",\"id\":" : ",\n{\"ph\":\"s\",\"id\":", 17) < 0 ||
                put_i64(&o, id[i]) < 0 || put(&o, ",\"cat\":\"", 8) < 0 || put_str(&o, c) < 0 ||
                put(&o, "\",\"name\":\"", 10) < 0 || put_str(&o, c) < 0 ||
                put(&o, "\",\"pid\":", 8) < 0 || put_i64(&o, pid[k]) < 0 ||
                put(&o, ",\"tid\":", 7) < 0 || put_i64(&o, tid[k]) < 0 ||
                put(&o, ",\"ts\":", 6) < 0 || put_us(&o, ts[k]) < 0 ||
                (end && put(&o, ",\"bp\":\"e\"", 9) < 0) || put(&o, "}", 1) < 0)
                goto done;
        }
    }
    result = PyUnicode_DecodeUTF8(o.buf ? o.buf : "", o.len, "strict");
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&v[k]);
    PyMem_Free(o.buf);
    return result;
}

static PyMethodDef methods[] = {
    {"flows", flows, METH_VARARGS, "Text of a chunk of Chrome-trace flow events."},
    {"events", events, METH_VARARGS, "Text of a chunk of Chrome-trace X events (see the file comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jsonfmt", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__jsonfmt(void) { return stamped(PyModule_Create(&module)); }
