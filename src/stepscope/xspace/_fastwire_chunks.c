/*
 * The XSpace decoder's event chunks (see _fastwire.c for the passes): counting and filling
 * run without the GIL, on `threads` workers taking chunks in turn; interning the strings
 * runs after them, in file order, so the ids do not depend on the number of workers.
 */
#include "_fastwire.h"

#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#define HAVE_THREADS 1
#endif

/* Pass B for one chunk: count its stats (skipped by length) and aggregated events. */
static int count_chunk(Chunk *k) {
    Cursor c = {k->p, k->end};
    uint64_t tag;
    Py_ssize_t stats = 0;
    long long aggregated = 0;
    while (c.p < c.end) {
        if (read_varint(&c, &tag)) return -1;
        if (tag != ((4 << 3) | 2)) { /* a line field between events */
            if (skip_value(&c, (uint32_t)(tag & 7))) return -1;
            continue;
        }
        Cursor e;
        if (read_len(&c, &e)) return -1;
        int occurrences = 0;
        while (e.p < e.end) {
            if (read_varint(&e, &tag)) return -1;
            uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
            if (field == 4 && wire == 2) {
                Cursor s;
                if (read_len(&e, &s)) return -1;
                stats++;
            } else if (wire == 0) { /* values are not needed here: find the varint's end */
                if (skip_varint(&e)) return -1;
                if (field == 2 || field == 5) occurrences = field == 5; /* a oneof: last wins */
            } else if (skip_value(&e, wire)) {
                return -1;
            }
        }
        aggregated += occurrences;
    }
    k->n_stats = stats;
    k->aggregated = aggregated;
    return 0;
}

/* One stat into row `st`; a string's value is the offset of its length prefix in the
 * buffer until pass D interns it. */
static int fill_stat(Cursor c, Columns *out, Py_ssize_t st, const uint8_t *base,
                     Py_ssize_t *strings) {
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
            const uint8_t *at = c.p;
            Cursor sub;
            if (read_len(&c, &sub)) return -1;
            kind = field == 5 ? KIND_STR : KIND_BYTES;
            value = (int64_t)(at - base);
        } else if (skip_value(&c, wire)) {
            return -1;
        }
    }
    out->st_meta[st] = meta;
    out->st_kind[st] = kind;
    out->st_value[st] = value;
    if (kind == KIND_STR || kind == KIND_BYTES) (*strings)++;
    return 0;
}

/* Pass C for one chunk: its events and stats at their rows. */
static int fill_chunk(Chunk *k, Columns *out, const uint8_t *base) {
    Cursor c = {k->p, k->end};
    uint64_t tag, v;
    Py_ssize_t ev = k->first_event, st = k->first_stat, st_end = st + k->n_stats;
    Py_ssize_t ev_end = ev + k->n_events, strings = 0;
    while (c.p < c.end) {
        if (read_varint(&c, &tag)) return -1;
        if (tag != ((4 << 3) | 2)) {
            if (skip_value(&c, (uint32_t)(tag & 7))) return -1;
            continue;
        }
        Cursor e;
        if (read_len(&c, &e) || ev == ev_end) return -1;
        int64_t meta = 0, offset = 0, duration = 0;
        out->ev_stat_start[ev] = st;
        while (e.p < e.end) {
            if (read_varint(&e, &tag)) return -1;
            uint32_t field = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
            if (wire == 0 && (field == 1 || field == 2 || field == 3 || field == 5)) {
                if (read_varint(&e, &v)) return -1;
                if (field == 1) meta = (int64_t)v;
                else if (field == 2) offset = (int64_t)v;
                else if (field == 3) duration = (int64_t)v;
                else offset = 0;
            } else if (field == 4 && wire == 2) {
                Cursor s;
                if (read_len(&e, &s) || st == st_end) return -1;
                if (fill_stat(s, out, st++, base, &strings)) return -1;
            } else if (skip_value(&e, wire)) {
                return -1;
            }
        }
        out->ev_meta[ev] = meta;
        out->ev_offset_ps[ev] = offset;
        out->ev_duration_ps[ev] = duration;
        out->ev_line[ev] = k->line;
        ev++;
    }
    k->n_strings = strings;
    return ev == ev_end && st == st_end ? 0 : -1;
}

typedef struct {
    Chunk *chunks;
    Py_ssize_t n;
    Columns *out;
    const uint8_t *base;
    Py_ssize_t next; /* the next chunk to take (atomic) */
    int failed;      /* any chunk corrupt (atomic) */
} Work;

static void *work(void *arg) {
    Work *w = arg;
    for (;;) {
        Py_ssize_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
        if (i >= w->n || __atomic_load_n(&w->failed, __ATOMIC_RELAXED)) break;
        int bad = w->out ? fill_chunk(&w->chunks[i], w->out, w->base) : count_chunk(&w->chunks[i]);
        if (bad) __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

#define MAX_WORKERS 64

int run_chunks(Chunk *chunks, Py_ssize_t n, int threads, Columns *out, const uint8_t *base) {
    Work w = {chunks, n, out, base, 0, 0};
    if (threads > n) threads = (int)n;
    if (threads > MAX_WORKERS) threads = MAX_WORKERS;
    if (threads < 1) threads = 1; /* decode() refuses fewer; no chunks: this thread alone */
    Py_BEGIN_ALLOW_THREADS
#ifdef HAVE_THREADS
    pthread_t helpers[MAX_WORKERS];
    int started = 0;
    for (; started < threads - 1; started++) /* a helper that fails to start is not needed */
        if (pthread_create(&helpers[started], NULL, work, &w)) break;
    work(&w);
    for (int i = 0; i < started; i++) pthread_join(helpers[i], NULL);
#else
    (void)threads;
    work(&w);
#endif
    Py_END_ALLOW_THREADS
    return w.failed;
}

/* FNV-1a, 64 bits: strings are few and short; the table is keyed by (hash, bytes). */
static uint64_t hash_bytes(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

typedef struct {
    uint64_t hash;
    const uint8_t *p;
    Py_ssize_t len;
    int64_t id; /* -1: empty slot */
} Slot;

static Slot *new_table(Py_ssize_t cap) {
    Slot *table = PyMem_Malloc((size_t)cap * sizeof(Slot));
    if (!table) return NULL;
    for (Py_ssize_t i = 0; i < cap; i++) table[i].id = -1;
    return table;
}

static Slot *find_slot(Slot *table, Py_ssize_t cap, uint64_t h, const uint8_t *p, Py_ssize_t n) {
    for (Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)(cap - 1));; i = (i + 1) & (cap - 1)) {
        Slot *s = &table[i];
        if (s->id < 0 || (s->hash == h && s->len == n && memcmp(s->p, p, (size_t)n) == 0))
            return s;
    }
}

PyObject *intern_strings(const Chunk *chunks, Py_ssize_t n, Columns *out, const uint8_t *base) {
    PyObject *strings = PyList_New(0);
    Py_ssize_t cap = 1024, used = 0;
    Slot *table = NULL;
    if (!strings) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!chunks[k].n_strings) continue;
        if (!table && !(table = new_table(cap))) goto nomem;
        Py_ssize_t lo = chunks[k].first_stat, hi = lo + chunks[k].n_stats;
        for (Py_ssize_t st = lo; st < hi; st++) {
            if (out->st_kind[st] != KIND_STR && out->st_kind[st] != KIND_BYTES) continue;
            Cursor c = {base + out->st_value[st], chunks[k].end}, sub;
            if (read_len(&c, &sub)) { /* checked by pass C: cannot happen */
                PyErr_SetString(PyExc_ValueError, CORRUPT);
                goto fail;
            }
            Py_ssize_t len = sub.end - sub.p;
            uint64_t h = hash_bytes(sub.p, len);
            Slot *slot = find_slot(table, cap, h, sub.p, len);
            if (slot->id < 0) {
                PyObject *item = PyBytes_FromStringAndSize((const char *)sub.p, len);
                if (!item || PyList_Append(strings, item)) { Py_XDECREF(item); goto fail; }
                Py_DECREF(item);
                *slot = (Slot){h, sub.p, len, used++};
                if (2 * used > cap) { /* grow: rehash every entry */
                    Slot *grown = new_table(2 * cap);
                    if (!grown) goto nomem;
                    for (Py_ssize_t i = 0; i < cap; i++)
                        if (table[i].id >= 0)
                            *find_slot(grown, 2 * cap, table[i].hash, table[i].p, table[i].len) =
                                table[i];
                    PyMem_Free(table);
                    table = grown;
                    cap *= 2;
                }
                out->st_value[st] = used - 1;
            } else {
                out->st_value[st] = slot->id;
            }
        }
    }
    PyMem_Free(table);
    return strings;
nomem:
    PyErr_NoMemory();
fail:
    PyMem_Free(table);
    Py_DECREF(strings);
    return NULL;
}
