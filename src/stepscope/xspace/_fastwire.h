/* Shared by the XSpace decoder's passes (_fastwire.c: the walk and the module;
 * _fastwire_chunks.c: the event chunks, decoded by one or more workers without the GIL). */
#ifndef STEPSCOPE_FASTWIRE_H
#define STEPSCOPE_FASTWIRE_H

#include <Python.h>

#include "../_native.h"
#include <stdint.h>
#include <string.h>

#define CORRUPT "truncated or corrupt protobuf data"

enum { KIND_NONE = 0, KIND_INT = 1, KIND_UINT = 2, KIND_DOUBLE = 3, KIND_STR = 4,
       KIND_BYTES = 5, KIND_REF = 6 };

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

static inline int read_varint(Cursor *c, uint64_t *out) {
    if (c->p < c->end && !(*c->p & 0x80)) { /* one byte: tags, small ids, short lengths */
        *out = *c->p++;
        return 0;
    }
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Up to 8 bytes (times in picoseconds, values) without a branch per byte: the first byte
     * without a continuation bit ends it; the 7-bit groups are packed by three shifts. */
    if (c->end - c->p >= 8) {
        uint64_t x;
        memcpy(&x, c->p, 8);
        uint64_t stops = ~x & 0x8080808080808080ULL;
        if (stops) {
            int len = (__builtin_ctzll(stops) >> 3) + 1;
            if (len < 8) x &= (1ULL << (8 * len)) - 1;
            x = ((x & 0x7F007F007F007F00ULL) >> 1) | (x & 0x007F007F007F007FULL);
            x = ((x & 0x3FFF00003FFF0000ULL) >> 2) | (x & 0x00003FFF00003FFFULL);
            x = ((x & 0x0FFFFFFF00000000ULL) >> 4) | (x & 0x000000000FFFFFFFULL);
            *out = x;
            c->p += len;
            return 0;
        }
    }
#endif
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

/* Step over a varint without assembling its value (at most 10 bytes). */
static inline int skip_varint(Cursor *c) {
    const uint8_t *limit = c->end - c->p > 10 ? c->p + 10 : c->end;
    for (const uint8_t *q = c->p; q < limit; q++)
        if (!(*q & 0x80)) {
            c->p = q + 1;
            return 0;
        }
    return -1;
}

/* Skip one field's value of the given wire type. */
static inline int skip_value(Cursor *c, uint32_t wire) {
    uint64_t n;
    switch (wire) {
    case 0: return skip_varint(c);
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
static inline int read_len(Cursor *c, Cursor *sub) {
    uint64_t n;
    if (read_varint(c, &n) || (uint64_t)(c->end - c->p) < n) return -1;
    sub->p = c->p;
    sub->end = c->p + n;
    c->p += n;
    return 0;
}

/* Consecutive events of one line: the bytes from the first event's tag to the end of the
 * last (other line fields in between are skipped again), and where its rows go. */
typedef struct {
    const uint8_t *p, *end;
    int32_t line;
    Py_ssize_t first_event, n_events;
    Py_ssize_t first_stat, n_stats; /* n_stats counted by pass B */
    long long aggregated;           /* events carrying num_occurrences (pass B) */
    Py_ssize_t n_strings;           /* string and bytes stats (pass C) */
} Chunk;

typedef struct {
    int64_t *ev_meta, *ev_offset_ps, *ev_duration_ps, *ev_stat_start;
    int32_t *ev_line;
    int64_t *st_meta, *st_value;
    int8_t *st_kind;
} Columns;

/* Pass B (out == NULL: count stats) or C (fill `out`) over every chunk with `threads`
 * workers, the GIL released; nonzero when any chunk is corrupt. */
int run_chunks(Chunk *chunks, Py_ssize_t n, int threads, Columns *out, const uint8_t *base);

/* Pass D: string stats' buffer offsets -> ids of the returned list (first appearance). */
PyObject *intern_strings(const Chunk *chunks, Py_ssize_t n, Columns *out, const uint8_t *base);

/* space_header() and plane_header(), added to the module (_fastwire_headers.c). */
extern PyMethodDef header_methods[];
extern PyMethodDef row_methods[]; /* _fastwire_rows.c */

#endif
