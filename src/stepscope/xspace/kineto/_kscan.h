/* Shared by _kscan.c (the Python module) and _kscan_json.c (the JSON scanner). */
#ifndef STEPSCOPE_KSCAN_H
#define STEPSCOPE_KSCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
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

typedef struct { char *data; Py_ssize_t len, cap; } Buf;

/* Interned strings: open addressing over (offset, length) spans of the input. */
typedef struct { Py_ssize_t off, len; uint64_t hash; int is_key; } Entry;
typedef struct {
    const uint8_t *base;
    Entry *entries;   /* by id */
    int32_t *slots;   /* id + 1, 0 = empty */
    Py_ssize_t count, cap, nslots;
} Table;

typedef struct {
    const uint8_t *p, *start, *end;
    int error;  /* not JSON this scanner accepts: the caller takes the Python path */
    int oom;
    Table table;
} Scanner;

typedef struct {
    Buf ph, flags, cat, name, pid, tid, ts, dur, id, nargs;
    Buf key, kind, value;
} Out;

/* The top-level object into o; lo, hi: the span of the traceEvents array. 0 on success. */
int kscan_document(Scanner *s, Out *o, Py_ssize_t *lo, Py_ssize_t *hi);
/* Fills the byte table scan_string uses; once, before the first scan. */
void kscan_init(void);

#endif
