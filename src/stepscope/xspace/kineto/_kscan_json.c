/*
 * The JSON side of _kscan (see _kscan.c): a validating one-pass scanner of a Kineto trace
 * document that writes event columns and argument rows (Out) and interns strings (Table).
 */
#include "_kscan.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define buf_put kscan_buf_put
#define intern kscan_intern

static void ws(Scanner *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

/* Bytes that end a run of plain string content: the quote, a backslash, control characters
 * (invalid in JSON strings) and the bytes of multi-byte UTF-8 sequences. */
static uint8_t SPECIAL[256];

void kscan_init(void) {
    for (int c = 0; c < 256; c++) SPECIAL[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
}

static int is_cont(uint8_t c) { return (c & 0xC0) == 0x80; }

/* The first byte from p that is SPECIAL (or end): 16 bytes at a time where SSE2 is there
 * (every x86-64), the table for the rest. Names run to hundreds of bytes (kernel signatures). */
static const uint8_t *skip_plain(const uint8_t *p, const uint8_t *end) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i bytes = _mm_loadu_si128((const __m128i *)p);
        /* signed: bytes from 0x80 on are negative, so "below 0x20" takes them too */
        __m128i special = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
            _mm_cmplt_epi8(bytes, space));
        int mask = _mm_movemask_epi8(special);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && !SPECIAL[*p]) p++;
    return p;
}

/* A string starting at the quote: content span in off, len. Checks escapes and UTF-8. */
static int scan_string(Scanner *s, Py_ssize_t *off, Py_ssize_t *len) {
    const uint8_t *p = s->p + 1, *end = s->end;
    *off = p - s->start;
    while (p < end) {
        p = skip_plain(p, end);
        if (p >= end) break;
        uint8_t c = *p;
        if (c == '"') {
            *len = (p - s->start) - *off;
            s->p = p + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c == '\\') {
            if (p + 1 >= end) return -1;
            uint8_t e = p[1];
            if (e == 'u') {
                if (p + 6 > end) return -1;
                for (int i = 2; i < 6; i++)
                    if (!IS_XDIGIT(p[i])) return -1;
                p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                p += 2;
            } else {
                return -1;
            }
            continue;
        }
        if (c < 0x80) { p++; continue; }
        /* UTF-8: reject overlong forms, surrogates and code points beyond U+10FFFF. */
        if (c >= 0xC2 && c <= 0xDF) {
            if (p + 1 >= end || !is_cont(p[1])) return -1;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (p + 2 >= end || !is_cont(p[1]) || !is_cont(p[2])) return -1;
            if (c == 0xE0 && p[1] < 0xA0) return -1;
            if (c == 0xED && p[1] >= 0xA0) return -1;
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (p + 3 >= end || !is_cont(p[1]) || !is_cont(p[2]) || !is_cont(p[3])) return -1;
            if (c == 0xF0 && p[1] < 0x90) return -1;
            if (c == 0xF4 && p[1] >= 0x90) return -1;
            p += 4;
        } else {
            return -1;
        }
    }
    return -1;
}

/* 10^k, exact in a double for k <= 22. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Whether the 8 bytes at p are all digits; then *value is their number (SWAR: bytes as
 * digits, pairs, quads, then the whole, each step one multiply). */
static inline int eight_digits(const uint8_t *p, uint64_t *value) {
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    (void)p;
    (void)value;
    return 0;  /* the digit by digit loop */
#else
    uint64_t w;
    memcpy(&w, p, 8);
    /* every byte 0x30-0x39: high nibble 3, and adding 6 does not carry out of the low one */
    if ((w & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u
        || ((w + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) != 0x3030303030303030u)
        return 0;
    w -= 0x3030303030303030u;  /* little endian: the first digit in the lowest byte */
    w = (w * 10) + (w >> 8);  /* each even byte: two digits */
    w = (((w & 0x000000FF000000FFu) * (100 + (1000000ull << 32)))
         + (((w >> 16) & 0x000000FF000000FFu) * (1 + (10000ull << 32)))) >> 32;
    *value = w;
    return 1;
#endif
}

/* A JSON number. *is_int: no fraction or exponent; then *ival (or *overflow) is set. */
typedef struct { int is_int, overflow, decimals; int64_t ival; double fval; } Number;

static int scan_number(Scanner *s, Number *n) {
    const uint8_t *p = s->p, *end = s->end, *first = p;
    int negative = 0;
    n->is_int = 1;
    n->overflow = 0;
    n->decimals = 0;
    if (p < end && *p == '-') { negative = 1; p++; }
    if (p >= end || !IS_DIGIT(*p)) return -1;
    uint64_t magnitude = 0;
    int digits_seen = 0;  /* digits in magnitude (a lone leading 0 counts none) */
    if (*p == '0') {
        p++;
    } else {
        /* 19 digits always fit in 64 bits; 20 or more (no leading zero) exceed int64 */
        const uint8_t *digits = p;
        /* Eight digits at a time while there are (a time in microseconds has 16): the same
         * value modulo 2**64 as digit by digit, without its chain of 16 dependent steps. */
        uint64_t eight;
        while (end - p >= 8 && eight_digits(p, &eight)) {
            magnitude = magnitude * 100000000u + eight;
            p += 8;
        }
        while (p < end && IS_DIGIT(*p)) {
            magnitude = magnitude * 10 + (unsigned)(*p - '0');
            p++;
        }
        if (p - digits > 19) n->overflow = 1;
        digits_seen = (int)(p - digits);
    }
    /* The fraction's digits go on into the mantissa while it stays exact (19 digits). */
    uint64_t mantissa = magnitude;
    if (p < end && *p == '.') {
        n->is_int = 0;
        p++;
        if (p >= end || !IS_DIGIT(*p)) return -1;
        while (p < end && IS_DIGIT(*p)) {
            if (digits_seen < 19) mantissa = mantissa * 10 + (unsigned)(*p - '0');
            digits_seen++;
            p++;
            n->decimals++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        n->is_int = 0;
        n->decimals = 99;  /* an exponent: not a form Kineto writes for times */
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !IS_DIGIT(*p)) return -1;
        while (p < end && IS_DIGIT(*p)) p++;
    }
    if (n->is_int) {
        if (!negative && magnitude > (uint64_t)INT64_MAX) n->overflow = 1;
        if (negative && magnitude > (uint64_t)INT64_MAX + 1) n->overflow = 1;
        n->ival = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    } else if (n->decimals <= 22 && digits_seen <= 19 && mantissa <= (UINT64_C(1) << 53)) {
        /* No exponent, an exact mantissa and an exact power of ten: their quotient is the
         * correctly rounded value, the double strtod gives (Clinger's fast path), without
         * strtod's locale and big-number work (a seventh of a Kineto scan: every "ts"). */
        double value = (double)mantissa / POW10[n->decimals];
        n->fval = negative ? -value : value;
    } else {
        char local[64];
        Py_ssize_t len = p - first;
        if (len >= (Py_ssize_t)sizeof(local)) return -1;
        memcpy(local, first, (size_t)len);
        local[len] = 0;
        n->fval = strtod(local, NULL);
        if (!isfinite(n->fval)) return -1;
    }
    s->p = p;
    return 0;
}

static int skip_value(Scanner *s, int depth);

static int skip_container(Scanner *s, int depth, uint8_t close) {
    if (depth > MAX_DEPTH) return -1;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == close) { s->p++; return 0; }
    for (;;) {
        if (close == '}') {
            Py_ssize_t off, len;
            if (s->p >= s->end || *s->p != '"' || scan_string(s, &off, &len)) return -1;
            ws(s);
            if (s->p >= s->end || *s->p != ':') return -1;
            s->p++;
            ws(s);
        }
        if (skip_value(s, depth + 1)) return -1;
        ws(s);
        if (s->p >= s->end) return -1;
        if (*s->p == ',') { s->p++; ws(s); continue; }
        if (*s->p == close) { s->p++; return 0; }
        return -1;
    }
}

static int literal(Scanner *s, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n)) return -1;
    s->p += n;
    return 0;
}

static int skip_value(Scanner *s, int depth) {
    if (s->p >= s->end) return -1;
    Py_ssize_t off, len;
    Number n;
    switch (*s->p) {
    case '"': return scan_string(s, &off, &len);
    case '{': return skip_container(s, depth, '}');
    case '[': return skip_container(s, depth, ']');
    case 't': return literal(s, "true");
    case 'f': return literal(s, "false");
    case 'n': return literal(s, "null");
    default: return scan_number(s, &n);
    }
}

/* Microseconds -> ns as devices.us_to_ns; -1 when out of range or not modelled. */
static int to_ns(const Number *n, int64_t *out) {
    if (n->is_int) {
        if (n->overflow || n->ival > (MAX_NS - 1) / 1000 || n->ival < -(MAX_NS - 1) / 1000)
            return -1;
        *out = n->ival * 1000;
        return 0;
    }
    if (n->decimals > 3 || !(fabs(n->fval) < (double)(MAX_NS / 1000))) return -1;
    double whole = trunc(n->fval);
    int64_t ns = (int64_t)whole * 1000 + (int64_t)nearbyint((n->fval - whole) * 1000.0);
    if (ns >= MAX_NS || ns <= -MAX_NS) return -1;
    *out = ns;
    return 0;
}


/* A time field: ns, or F_BAD when it is a number this scanner does not convert. */
static int time_field(Scanner *s, int64_t *ns, uint8_t *flags, uint8_t present) {
    if (s->p < s->end && *s->p == 'n') return literal(s, "null");
    if (s->p < s->end && (*s->p == '-' || IS_DIGIT(*s->p))) {
        Number n;
        if (scan_number(s, &n)) return -1;
        if (to_ns(&n, ns)) *flags |= F_BAD;
        else *flags |= present;
        return 0;
    }
    *flags |= F_BAD;
    return skip_value(s, 1);
}

/* Whether n bytes at a and b are the same: whole-word loads (the strings are short, a call
 * to memcmp cost more than the compare). */
static inline int same_bytes(const uint8_t *a, const uint8_t *b, Py_ssize_t n) {
    uint64_t x, y;
    uint32_t u, v;
    if (n >= 8) {
        for (Py_ssize_t i = 0; i + 8 < n; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y) return 0;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        memcpy(&u, a, 4);
        memcpy(&v, b, 4);
        if (u != v) return 0;
        memcpy(&u, a + n - 4, 4);
        memcpy(&v, b + n - 4, 4);
        return u == v;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* The id of the string at s->p (its opening quote) when it is the interned string guess - 1
 * (s->p then past its closing quote), else -1 (nothing read). An interned string's bytes were
 * checked as a whole string's content when first scanned, so the same bytes followed by a
 * quote are that string again (its last byte cannot be an escaping backslash): this skips
 * scan_string and intern's hash and probe for a name, category or key that the trace's
 * repeating order predicts (most of them: a training loop repeats its events step by step). */
static inline int32_t guessed(Scanner *s, int32_t guess) {
    if (guess <= 0) return -1;
    const Entry *e = &s->table.entries[guess - 1];
    const uint8_t *q = s->p + 1;
    if (s->end - q <= e->len || q[e->len] != '"'
        || !same_bytes(q, (const uint8_t *)s->table.arena.data + e->off, e->len))
        return -1;
    s->p = q + e->len + 1;
    return guess - 1;
}

/* The string at s->p (its opening quote), interned: guessed first; -1 invalid (or oom). */
static int32_t string_id(Scanner *s, int32_t guess) {
    int32_t id = guessed(s, guess);
    if (id >= 0) return id;
    Py_ssize_t off, len;
    if (scan_string(s, &off, &len)) return -1;
    id = intern(&s->table, s->start + off, len);
    if (id < 0) s->oom = 1;
    return id;
}

/* A string-or-null field (cat, name, ph, s): string id, -1 for null; F_BAD otherwise.
 * last: the field's value in the last event that had one (id + 1; NULL: no guess), whose
 * `next` guesses this one and is then set to it. */
static int string_field(Scanner *s, int32_t *id, uint8_t *flags, int32_t *last) {
    if (s->p < s->end && *s->p == '"') {
        Entry *before = last && *last ? &s->table.entries[*last - 1] : NULL;
        *id = string_id(s, before ? before->next : 0);
        if (*id < 0) return -1;
        if (last) {
            if (*last) s->table.entries[*last - 1].next = *id + 1;  /* (entries may have moved) */
            *last = *id + 1;
        }
        return 0;
    }
    if (s->p < s->end && *s->p == 'n') return literal(s, "null");
    *flags |= F_BAD;
    return skip_value(s, 1);
}

/* pid / tid: an integer, or a string (its id, with str_flag). */
static int id_field(Scanner *s, int64_t *value, uint8_t *flags, uint8_t str_flag) {
    if (s->p < s->end && *s->p == '"') {
        int32_t sid;
        if (string_field(s, &sid, flags, NULL)) return -1;
        *value = sid;
        *flags |= str_flag;
        return 0;
    }
    if (s->p < s->end && (*s->p == '-' || IS_DIGIT(*s->p))) {
        Number n;
        if (scan_number(s, &n)) return -1;
        /* int32 columns (4 bytes less per event each); wider ids take the Python path */
        if (!n.is_int || n.overflow || n.ival > INT32_MAX || n.ival < INT32_MIN) *flags |= F_BAD;
        *value = n.ival;
        return 0;
    }
    *flags |= F_BAD;  /* null, a list, ...: the Python path decides */
    return skip_value(s, 1);
}

static int put_row(Out *o, int32_t key, int8_t kind, int64_t value) {
    return buf_put(&o->key, &key, 4) || buf_put(&o->kind, &kind, 1) || buf_put(&o->value, &value, 8);
}

/* The args object: one row per entry. name: the event's name (-1 none, or not yet read),
 * whose `first_key` guesses the first key (then each key's `next` the one after it). */
static int scan_args(Scanner *s, Out *o, uint32_t *count, uint8_t *flags, int32_t name) {
    int32_t keys[64];
    int32_t last = -1;  /* the previous key */
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return 0; }
    for (;;) {
        Py_ssize_t off, len;
        if (s->p >= s->end || *s->p != '"') return -1;
        int32_t guess = last >= 0 ? s->table.entries[last].next
                        : name >= 0 ? s->table.entries[name].first_key : 0;
        int32_t key = string_id(s, guess);
        if (key < 0) return -1;
        if (key + 1 != guess) {
            if (last >= 0) s->table.entries[last].next = key + 1;
            else if (name >= 0) s->table.entries[name].first_key = key + 1;
        }
        last = key;
        s->table.entries[key].is_key = 1;
        if (*count < 64) {
            for (uint32_t i = 0; i < *count; i++)
                if (keys[i] == key) *flags |= F_BAD;  /* a repeated key: the last one wins */
            keys[*count] = key;
        } else {
            *flags |= F_BAD;
        }
        ws(s);
        if (s->p >= s->end || *s->p != ':') return -1;
        s->p++;
        ws(s);
        if (s->p >= s->end) return -1;
        int8_t kind;
        int64_t value = 0;
        uint8_t c = *s->p;
        if (c == '"') {
            if (scan_string(s, &off, &len)) return -1;
            kind = A_STR;
            value = intern(&s->table, s->start + off, len);
        } else if (c == '[' || c == '{') {
            const uint8_t *first = s->p;
            if (skip_value(s, 1)) return -1;
            kind = A_JSON;
            value = intern(&s->table, first, s->p - first);
        } else if (c == 't' || c == 'f') {
            if (literal(s, c == 't' ? "true" : "false")) return -1;
            kind = A_BOOL;
            value = c == 't';
        } else if (c == 'n') {
            if (literal(s, "null")) return -1;
            kind = A_NULL;
        } else {
            Number n;
            if (scan_number(s, &n)) return -1;
            if (n.is_int) {
                if (n.overflow) *flags |= F_BAD;
                kind = A_INT;
                value = n.ival;
            } else {
                kind = A_FLOAT;
                memcpy(&value, &n.fval, 8);
            }
        }
        if (value < 0 && (kind == A_STR || kind == A_JSON)) { s->oom = 1; return -1; }
        if (put_row(o, key, kind, value)) { s->oom = 1; return -1; }
        (*count)++;
        ws(s);
        if (s->p >= s->end) return -1;
        if (*s->p == ',') { s->p++; ws(s); continue; }
        if (*s->p == '}') { s->p++; return 0; }
        return -1;
    }
}

static int field_is(const uint8_t *p, Py_ssize_t len, const char *name) {
    return (size_t)len == strlen(name) && memcmp(p, name, (size_t)len) == 0;
}

/* An event's field name of 1-4 lowercase letters at s->p (its opening quote: every field
 * this scanner reads, ph to args), read without scan_string (a call and a 16-byte compare for
 * 2-3 letters, nine times an event): its first byte, s->p moved past its closing quote, *len
 * set; NULL (nothing read) for any other string. Letters need no check as string content. */
static inline const uint8_t *short_key(Scanner *s, Py_ssize_t *len) {
    const uint8_t *q = s->p + 1;
    if (s->end - q < 5) return NULL;
    Py_ssize_t n = 0;
    while (n < 4 && q[n] >= 'a' && q[n] <= 'z') n++;
    if (!n || q[n] != '"') return NULL;
    *len = n;
    s->p = q + n + 1;
    return q;
}

/* One entry of traceEvents. */
static int scan_event(Scanner *s, Out *o) {
    uint8_t ph = 0, flags = 0;
    int32_t cat = -1, name = -1;
    int64_t pid = 0, tid = 0, ts = 0, dur = 0, id = 0;
    uint32_t nargs = 0;
    unsigned seen = 0;
    if (*s->p != '{') {
        flags |= F_BAD;  /* not an object */
        if (skip_value(s, 1)) return -1;
    } else {
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == '}') s->p++;
        else for (;;) {
            Py_ssize_t off, len;
            if (s->p >= s->end || *s->p != '"') return -1;
            const uint8_t *k = short_key(s, &len);
            if (!k) {
                if (scan_string(s, &off, &len)) return -1;
                k = s->start + off;
            }
            ws(s);
            if (s->p >= s->end || *s->p != ':') return -1;
            s->p++;
            ws(s);
            unsigned bit = 0;
            int rc;
            if (len == 2 && k[0] == 'p' && k[1] == 'h') {
                bit = 1;
                int32_t sid = -1;
                rc = string_field(s, &sid, &flags, &s->last_ph);
                Entry *e = sid >= 0 ? &s->table.entries[sid] : NULL;
                if (e && e->len == 1) ph = (uint8_t)s->table.arena.data[e->off];
                else flags |= F_BAD;
            } else if (field_is(k, len, "cat")) {
                bit = 2; rc = string_field(s, &cat, &flags, &s->last_cat);
            } else if (field_is(k, len, "name")) {
                bit = 4; rc = string_field(s, &name, &flags, &s->last_name);
            } else if (field_is(k, len, "pid")) {
                bit = 8; rc = id_field(s, &pid, &flags, F_PID_STR);
            } else if (field_is(k, len, "tid")) {
                bit = 16; rc = id_field(s, &tid, &flags, F_TID_STR);
            } else if (field_is(k, len, "ts")) {
                bit = 32; rc = time_field(s, &ts, &flags, F_TS);
            } else if (field_is(k, len, "dur")) {
                bit = 64; rc = time_field(s, &dur, &flags, F_DUR);
            } else if (field_is(k, len, "id")) {
                bit = 128;
                if (s->p < s->end && (*s->p == '-' || IS_DIGIT(*s->p))) {
                    Number n;
                    rc = scan_number(s, &n);
                    if (!rc && n.is_int && !n.overflow) { id = n.ival; flags |= F_ID; }
                    else flags |= F_BAD;
                } else if (s->p < s->end && *s->p == 'n') {
                    rc = literal(s, "null");
                } else {
                    flags |= F_BAD;
                    rc = skip_value(s, 1);
                }
            } else if (field_is(k, len, "args")) {
                bit = 256;
                if (s->p < s->end && *s->p == '{') {
                    flags |= F_ARGS;
                    rc = scan_args(s, o, &nargs, &flags, name);
                } else if (s->p < s->end && *s->p == 'n') {
                    rc = literal(s, "null");
                } else {
                    flags |= F_BAD;  /* args that are neither an object nor null */
                    rc = skip_value(s, 1);
                }
            } else if (len == 1 && k[0] == 's') {
                bit = 512;
                int32_t sid = -1;
                rc = string_field(s, &sid, &flags, NULL);
                Entry *e = sid >= 0 ? &s->table.entries[sid] : NULL;
                if (e && e->len == 1 && s->table.arena.data[e->off] == 'g') flags |= F_GLOBAL;
            } else {
                rc = skip_value(s, 1);
            }
            if (rc) return -1;
            if (bit & seen) flags |= F_BAD;  /* a repeated field */
            seen |= bit;
            ws(s);
            if (s->p >= s->end) return -1;
            if (*s->p == ',') { s->p++; ws(s); continue; }
            if (*s->p == '}') { s->p++; break; }
            return -1;
        }
    }
    /* Without a pid or tid the event gets a thread of its own ("thread None"), which these
     * columns do not model: flagged, the trace is read by the Python scanner. */
    if ((seen & 24) != 24) flags |= F_BAD;
    int32_t pid32 = (int32_t)pid, tid32 = (int32_t)tid;
    if (buf_put(&o->ph, &ph, 1) || buf_put(&o->flags, &flags, 1) || buf_put(&o->cat, &cat, 4)
        || buf_put(&o->name, &name, 4) || buf_put(&o->pid, &pid32, 4)
        || buf_put(&o->tid, &tid32, 4)
        || buf_put(&o->ts, &ts, 8) || buf_put(&o->dur, &dur, 8)
        || ((flags & F_ID) && buf_put(&o->id, &id, 8)) || buf_put(&o->nargs, &nargs, 4)) {
        s->oom = 1;
        return -1;
    }
    return 0;
}

Py_ssize_t kscan_out_bytes(const Out *o) {
    return o->ph.len + o->flags.len + o->cat.len + o->name.len + o->pid.len + o->tid.len
         + o->ts.len + o->dur.len + o->id.len + o->nargs.len + o->key.len + o->kind.len
         + o->value.len;
}

/* One unit from the state st->state: 0 when it is complete (the state moves on), -1 when the
 * window cuts it or the input is not a document this scanner models. */
static int scan_unit(Stream *st) {
    Scanner *s = &st->s;
    const uint8_t *mark = s->p;
    switch (st->state) {
    case ST_OPEN:
        ws(s);
        if (s->p >= s->end || *s->p != '{') return -1;
        s->p++;
        st->state = ST_MEMBER;
        break;
    case ST_MEMBER: {  /* "key": value (an empty document or a trailing comma fail here) */
        Py_ssize_t off, len;
        ws(s);
        if (s->p >= s->end || *s->p != '"' || scan_string(s, &off, &len)) return -1;
        int events = field_is(s->start + off, len, "traceEvents");
        ws(s);
        if (s->p >= s->end || *s->p != ':') return -1;
        s->p++;
        ws(s);
        if (!events) {
            /* The value ends where the window shows what follows it: a number the window
             * cuts ("1669...|123") would otherwise read as a shorter number. */
            if (skip_value(s, 1)) return -1;
            ws(s);
            if (s->p >= s->end) return -1;
            st->state = ST_SEP;
            break;
        }
        if (st->seen_events || s->p >= s->end || *s->p != '[') return -1;
        const uint8_t *bracket = s->p++;
        ws(s);
        if (s->p >= s->end) return -1;
        int empty = *s->p == ']';
        if (empty) s->p++;
        if (buf_put(&st->header, mark, bracket - mark) || buf_put(&st->header, "[]", 2)) {
            s->oom = 1;
            return -1;
        }
        st->seen_events = 1;
        st->state = empty ? ST_SEP : ST_EVENTS;
        return 0;  /* the array's text stays out of the header */
    }
    case ST_EVENTS:  /* one event and what follows it: a comma, or the array's end */
        ws(s);  /* what the last unit's comma left when the window ended after it */
        if (s->p >= s->end || scan_event(s, &st->o)) return -1;
        ws(s);
        if (s->p >= s->end) return -1;
        if (*s->p == ',') {
            s->p++;
            ws(s);
        } else if (*s->p == ']') {
            s->p++;
            st->state = ST_SEP;
        } else {
            return -1;
        }
        return 0;
    case ST_SEP:
        ws(s);
        if (s->p >= s->end) return -1;
        if (*s->p == ',') st->state = ST_MEMBER;
        else if (*s->p == '}') st->state = ST_END;
        else return -1;
        s->p++;
        break;
    default:
        return -1;
    }
    if (buf_put(&st->header, mark, s->p - mark)) {
        s->oom = 1;
        return -1;
    }
    return 0;
}

int kscan_feed(Stream *st, const uint8_t *buf, Py_ssize_t len, int final) {
    Scanner *s = &st->s;
    Out *o = &st->o;
    Buf *bufs[] = {&o->ph, &o->flags, &o->cat, &o->name, &o->pid, &o->tid, &o->ts, &o->dur,
                   &o->id, &o->nargs, &o->key, &o->kind, &o->value};
    enum { NBUFS = sizeof(bufs) / sizeof(bufs[0]) };
    Py_ssize_t kept[NBUFS];
    s->start = s->p = buf;
    s->end = buf + len;
    while (st->state != ST_END) {
        const uint8_t *mark = s->p;
        Py_ssize_t header_len = st->header.len;
        for (int i = 0; i < NBUFS; i++) kept[i] = bufs[i]->len;
        if (!scan_unit(st)) continue;
        if (s->oom || final) return -1;
        /* Cut by the window's end (or invalid, which the final window will tell): undo the
         * unit's rows; strings it interned stay interned (complete strings, seen again). */
        for (int i = 0; i < NBUFS; i++) bufs[i]->len = kept[i];
        st->header.len = header_len;
        s->p = mark;
        return 1;
    }
    ws(s);
    if (s->p < s->end) return -1;  /* text after the document */
    /* A document without traceEvents is not a trace: None, and the Python scanner says so. */
    if (!st->seen_events) return -1;
    return final ? 0 : 1;
}
