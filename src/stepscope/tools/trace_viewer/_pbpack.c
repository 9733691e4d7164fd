/* Optional accelerator of the Perfetto export: encodes the TracePackets of a chunk of track
 * events in one pass. The bytes are exactly those of the numpy path in
 * stepscope/tools/trace_viewer/perfetto_trace.py (_event_packets), which is used when this module is not
 * built; tests compare both.
 *
 * pack(ts, kind, track, name, ann, ann_start, ann_len, meta, meta_start, meta_len,
 *      fout, fout_start, fout_len, fin, fin_start, fin_len, seq, flags) -> bytes
 * Arrays are C-contiguous int64 buffers of one length n (one record each); ann/meta/fout/fin
 * are byte buffers holding already-encoded repeated fields, copied as ranges. Record layout:
 *   Trace.packet(1) { timestamp(8) trusted_packet_sequence_id(10) sequence_flags(13)
 *                     track_event(11) { type(9) track_uuid(11) [name_iid(10)] ranges... } }
 * name_iid is written for begin and instant records (kind != 2) only.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../_native.h"
#include <stdint.h>
#include <string.h>

static inline Py_ssize_t vlen(uint64_t v) {
    Py_ssize_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline unsigned char *vput(unsigned char *p, uint64_t v) {
    while (v >= 0x80) { *p++ = (unsigned char)(v | 0x80); v >>= 7; }
    *p++ = (unsigned char)v;
    return p;
}

/* The key of a DebugAnnotation value field: its number and wire type (1: fixed64 for the
 * double, field 5; 0: varint). */
static inline uint64_t annotation_key(int64_t field) {
    return ((uint64_t)field << 3) | (field == 5 ? 1 : 0);
}

#define N_ARRAYS 12  /* int64 arrays */
#define N_BUFS 4     /* byte buffers */

static PyObject *pack(PyObject *self, PyObject *args) {
    PyObject *objs[N_ARRAYS + N_BUFS];
    unsigned long long seq, flags;
    /* order: ts kind track name | ann ann_start ann_len | meta meta_start meta_len |
       fout fout_start fout_len | fin fin_start fin_len */
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOKK", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10],
                          &objs[11], &objs[12], &objs[13], &objs[14], &objs[15], &seq, &flags))
        return NULL;
    static const int is_buf[16] = {0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0};
    Py_buffer views[16];
    int got = 0;
    PyObject *result = NULL;
    Py_ssize_t n = -1;
    for (int i = 0; i < 16; i++, got++) {
        if (native_array(objs[i], &views[i], is_buf[i] ? 1 : 8, 0, "pack")) goto done;
        if (!is_buf[i]) {
            Py_ssize_t len = views[i].len / 8;
            if (n < 0) n = len;
            else if (len != n) { PyErr_SetString(PyExc_ValueError, "arrays differ in length"); got++; goto done; }
        }
    }
    if (n < 0) n = 0;
    const int64_t *ts = views[0].buf, *kind = views[1].buf, *track = views[2].buf, *name = views[3].buf;
    const unsigned char *src[4] = {views[4].buf, views[7].buf, views[10].buf, views[13].buf};
    const Py_ssize_t src_len[4] = {views[4].len, views[7].len, views[10].len, views[13].len};
    const int64_t *start[4] = {views[5].buf, views[8].buf, views[11].buf, views[14].buf};
    const int64_t *length[4] = {views[6].buf, views[9].buf, views[12].buf, views[15].buf};
    Py_ssize_t header = 1 + vlen(seq) + 1 + vlen(flags);
    /* Pass 1: sizes. */
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t te = 1 + vlen((uint64_t)kind[i]) + 1 + vlen((uint64_t)track[i]);
        if (kind[i] != 2) te += 1 + vlen((uint64_t)name[i]);
        for (int b = 0; b < 4; b++) {
            int64_t s = start[b][i], l = length[b][i];
            if (l < 0 || s < 0 || s > src_len[b] || l > src_len[b] - s) {
                PyErr_SetString(PyExc_ValueError, "range outside its buffer");
                goto done;
            }
            te += l;
        }
        Py_ssize_t pk = 1 + vlen((uint64_t)ts[i]) + header + 1 + vlen((uint64_t)te) + te;
        int64_t grown;
        if (!add_ok(total, 1 + vlen((uint64_t)pk) + pk, &grown) || grown > PY_SSIZE_T_MAX) {
            PyErr_SetString(PyExc_OverflowError, "pack: the chunk is too large");
            goto done;
        }
        total = (Py_ssize_t)grown;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (!result) goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(result);
    /* Pass 2: write. */
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t te = 1 + vlen((uint64_t)kind[i]) + 1 + vlen((uint64_t)track[i]);
        if (kind[i] != 2) te += 1 + vlen((uint64_t)name[i]);
        for (int b = 0; b < 4; b++) te += length[b][i];
        Py_ssize_t pk = 1 + vlen((uint64_t)ts[i]) + header + 1 + vlen((uint64_t)te) + te;
        *p++ = 0x0a;
        p = vput(p, (uint64_t)pk);
        *p++ = 0x40;
        p = vput(p, (uint64_t)ts[i]);
        *p++ = 0x50;
        p = vput(p, seq);
        *p++ = 0x68;
        p = vput(p, flags);
        *p++ = 0x5a;
        p = vput(p, (uint64_t)te);
        *p++ = 0x48;
        p = vput(p, (uint64_t)kind[i]);
        *p++ = 0x58;
        p = vput(p, (uint64_t)track[i]);
        if (kind[i] != 2) {
            *p++ = 0x50;
            p = vput(p, (uint64_t)name[i]);
        }
        for (int b = 0; b < 4; b++) {
            int64_t l = length[b][i];
            if (l) { memcpy(p, src[b] + start[b][i], (size_t)l); p += l; }
        }
    }
done:
    for (int i = 0; i < got && i < 16; i++) PyBuffer_Release(&views[i]);
    if (PyErr_Occurred()) { Py_XDECREF(result); return NULL; }
    return result;
}

/* annotations(name_iid, field, value, sizes_out) -> bytes
 * One TrackEvent.debug_annotations (4) entry per row: DebugAnnotation { name_iid(1) = name_iid,
 * value in field `field` (3 uint, 4 int, 17 string iid: varint; 5 double: fixed64 bits) }.
 * The size of each entry goes to sizes_out (writable int64). Same bytes as the numpy path. */
static PyObject *annotations(PyObject *self, PyObject *args) {
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "OOOO", &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer v[4];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 4; got++)
        if (native_array(objs[got], &v[got], 8, got == 3, "annotations")) goto done;
    Py_ssize_t n = v[0].len / 8;
    for (int i = 1; i < 4; i++) {
        if (v[i].len != v[0].len) { PyErr_SetString(PyExc_ValueError, "arrays differ in length"); goto done; }
    }
    const int64_t *name = v[0].buf, *field = v[1].buf, *value = v[2].buf;
    int64_t *sizes = v[3].buf;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* a protobuf field number: its key sized as written */
        if (field[i] < 1 || field[i] > 0x1FFFFFFF) {
            PyErr_SetString(PyExc_ValueError, "annotations: a field number out of range");
            goto done;
        }
        Py_ssize_t inner = 1 + vlen((uint64_t)name[i]) + vlen(annotation_key(field[i]));
        inner += field[i] == 5 ? 8 : vlen((uint64_t)value[i]);
        sizes[i] = 1 + vlen((uint64_t)inner) + inner;
        total += sizes[i]; /* at most 39 bytes a row: no overflow for a buffer's rows */
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (!result) goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t inner = 1 + vlen((uint64_t)name[i]) + vlen(annotation_key(field[i]));
        inner += field[i] == 5 ? 8 : vlen((uint64_t)value[i]);
        *p++ = 0x22;
        p = vput(p, (uint64_t)inner);
        *p++ = 0x08;
        p = vput(p, (uint64_t)name[i]);
        p = vput(p, annotation_key(field[i]));
        if (field[i] == 5) {
            uint64_t bits = (uint64_t)value[i];
            for (int b = 0; b < 8; b++) *p++ = (unsigned char)(bits >> (8 * b));
        } else {
            p = vput(p, (uint64_t)value[i]);
        }
    }
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    if (PyErr_Occurred()) { Py_XDECREF(result); return NULL; }
    return result;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS, "Encode a chunk of Perfetto track-event packets."},
    {"annotations", annotations, METH_VARARGS, "Encode debug annotations, one per stat row."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pbpack", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pbpack(void) { return stamped(PyModule_Create(&module)); }
