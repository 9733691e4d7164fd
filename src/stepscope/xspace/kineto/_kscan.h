/* Shared by _kscan.c (the Python module) and _kscan_json.c (the JSON scanner). */
#ifndef STEPSCOPE_KSCAN_H
#define STEPSCOPE_KSCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../../_native.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { F_BAD = 1, F_PID_STR = 2, F_TID_STR = 4, F_TS = 8, F_DUR = 16, F_ID = 32,
       F_GLOBAL = 64, F_ARGS = 128 };
enum { A_INT = 0, A_FLOAT = 1, A_STR = 2, A_BOOL = 3, A_NULL = 4, A_JSON = 5 };
#define MAX_DEPTH 64
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_XDIGIT(c) (IS_DIGIT(c) || (((c) | 0x20) >= 'a' && ((c) | 0x20) <= 'f'))
#define MAX_NS (((int64_t)1) << 62)

/* A growing byte buffer; from 1 MiB on (on Linux) its own mapping, grown with mremap: malloc
 * would keep every smaller block it outgrew in its heap when the CLI tells it to keep freed
 * memory (decision 68), 50 MB more at the end of a 1M-event scan. */
typedef struct { char *data; Py_ssize_t len, cap; int mapped; } Buf;

/* Interned strings, copied into an arena (the input is read in windows that move on):
 * open addressing over (offset, length) spans of the arena. next / first_key (id + 1, 0 for
 * none) are guesses only, checked byte for byte before use (`guessed` in _kscan_json.c): the
 * string that followed this one last time in the same role (the next event's ph, cat or
 * name; the next argument key), and the first argument key of the last event of this name. */
typedef struct {
    Py_ssize_t off, len;
    uint64_t hash;
    int is_key;
    int32_t next, first_key;
} Entry;
typedef struct {
    Buf arena;
    Entry *entries;   /* by id */
    int32_t *slots;   /* id + 1, 0 = empty */
    Py_ssize_t count, cap, nslots;
} Table;

typedef struct {
    const uint8_t *p, *start, *end;  /* the current window of the input */
    int error;  /* not JSON this scanner accepts: the caller takes the Python path */
    int oom;
    Table table;
    /* the last event's ph, cat and name (id + 1, 0 for none): where the guesses start */
    int32_t last_ph, last_cat, last_name;
} Scanner;

typedef struct {
    Buf ph, flags, cat, name, pid, tid, ts, dur, id, nargs;
    Buf key, kind, value;
} Out;

/* Where the document's scan stands between two windows (each state begins a unit). */
enum { ST_OPEN, ST_MEMBER, ST_EVENTS, ST_SEP, ST_END };
typedef struct {
    Scanner s;
    Out o;
    Buf header;  /* the document without its events: the traceEvents array reads [] */
    int state, seen_events;
} Stream;

/* Scans the window buf[0:len] from where the last window stopped, one unit (a top-level
 * member, an event with the comma after it, ...) at a time: a unit that the window cuts is
 * undone and left for the next window. final: no input follows. Returns 0 when the document
 * is complete (final only), 1 for more input (st->s.p: the first byte not consumed), -1 when
 * the input is not a document this scanner models (or s.oom). */
int kscan_feed(Stream *st, const uint8_t *buf, Py_ssize_t len, int final);
Py_ssize_t kscan_out_bytes(const Out *o);
/* Grows b to hold at least need bytes; -1 out of memory. */
int kscan_buf_grow(Buf *b, Py_ssize_t need);
/* Appends n bytes (inline: ten calls per event). Nothing for n = 0: an empty buffer has no
 * data pointer yet, and memcpy to NULL is undefined even for no bytes. */
static inline int kscan_buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (n <= 0) return 0;
    if (b->len + n > b->cap && kscan_buf_grow(b, b->len + n)) return -1;
    memcpy(b->data + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}
void kscan_buf_free(Buf *b);
/* The id of the string p[0:len] in t (copied into its arena when new); -1 out of memory. */
int32_t kscan_intern(Table *t, const uint8_t *p, Py_ssize_t len);
/* Gives back what growing reserved beyond the data. */
void kscan_buf_shrink(Buf *b);
/* Fills the byte table scan_string uses; once, before the first scan. */
void kscan_init(void);

#endif
