/*
 * The scanner's growing buffers (Buf: columns, the header, the string arena) and its string
 * table (Table: interned strings copied into the arena), for _kscan_json.c and _kscan.c.
 */
#include "_kscan.h"
#ifdef __linux__
#include <sys/mman.h>
#endif

#define MAP_FROM ((Py_ssize_t)1 << 20)

int kscan_buf_grow(Buf *b, Py_ssize_t need) {
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
#ifdef MREMAP_MAYMOVE
    if (cap >= MAP_FROM) {
        void *p;
        if (b->mapped) {
            p = mremap(b->data, (size_t)b->cap, (size_t)cap, MREMAP_MAYMOVE);
        } else {
            p = mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                if (b->len) memcpy(p, b->data, (size_t)b->len);
                free(b->data);
            }
        }
        if (p == MAP_FAILED) return -1;
        b->data = p;
        b->cap = cap;
        b->mapped = 1;
        return 0;
    }
#endif
    char *grown = realloc(b->data, (size_t)cap);
    if (!grown) return -1;
    b->data = grown;
    b->cap = cap;
    return 0;
}

void kscan_buf_free(Buf *b) {
#ifdef MREMAP_MAYMOVE
    if (b->mapped) munmap(b->data, (size_t)b->cap);
    else
#endif
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->mapped = 0;
}

void kscan_buf_shrink(Buf *b) {
#ifdef MREMAP_MAYMOVE
    if (b->mapped) {
        Py_ssize_t page = 4096, cap = (b->len + page - 1) / page * page;
        if (cap < page) cap = page;
        if (cap < b->cap && mremap(b->data, (size_t)b->cap, (size_t)cap, 0) != MAP_FAILED)
            b->cap = cap;  /* shrunk in place */
        return;
    }
#endif
    char *data = b->data ? realloc(b->data, (size_t)(b->len ? b->len : 1)) : malloc(1);
    if (data) {
        b->data = data;
        b->cap = b->len ? b->len : 1;
    }
}


static uint64_t hash_bytes(const uint8_t *p, Py_ssize_t n) {
    /* 8 bytes per step (names are long: kernel signatures run to hundreds of bytes). */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        h = (h ^ word) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    /* The last 0-7 bytes by whole loads (two overlapping 4-byte words, or three single bytes):
     * copying them one by one into a word on the stack stalled the load that read it back
     * (store forwarding fails), a third of the function's time. The hash stays in the table. */
    uint64_t tail = 0;
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        tail = (uint64_t)lo | ((uint64_t)hi << 32);
    } else if (n > 0) {
        tail = (uint64_t)p[0] | ((uint64_t)p[n / 2] << 8) | ((uint64_t)p[n - 1] << 16);
    }
    h = (h ^ tail) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static int table_grow(Table *t) {
    Py_ssize_t nslots = t->nslots ? t->nslots * 2 : 1024;
    int32_t *slots = calloc((size_t)nslots, sizeof(int32_t));
    if (!slots) return -1;
    for (Py_ssize_t i = 0; i < t->count; i++) {
        Py_ssize_t s = (Py_ssize_t)(t->entries[i].hash & (uint64_t)(nslots - 1));
        while (slots[s]) s = (s + 1) & (nslots - 1);
        slots[s] = (int32_t)(i + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

/* The id of the string p[0:len] (copied into the arena when new). */
int32_t kscan_intern(Table *t, const uint8_t *p, Py_ssize_t len) {
    if ((t->count + 1) * 2 > t->nslots && table_grow(t)) return -1;
    uint64_t h = hash_bytes(p, len);
    Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1));
    while (t->slots[s]) {
        Entry *e = &t->entries[t->slots[s] - 1];
        /* an empty arena has no data pointer: no memcmp for an empty string */
        if (e->hash == h && e->len == len &&
            (len == 0 || memcmp(t->arena.data + e->off, p, (size_t)len) == 0))
            return t->slots[s] - 1;
        s = (s + 1) & (t->nslots - 1);
    }
    if (t->count == t->cap) {
        Py_ssize_t cap = t->cap ? t->cap * 2 : 1024;
        Entry *grown = realloc(t->entries, (size_t)cap * sizeof(Entry));
        if (!grown) return -1;
        t->entries = grown;
        t->cap = cap;
    }
    if (t->count >= INT32_MAX - 1) return -1;
    Py_ssize_t off = t->arena.len;
    if (kscan_buf_put(&t->arena, p, len)) return -1;
    t->entries[t->count] = (Entry){off, len, h, 0, 0, 0};
    t->slots[s] = (int32_t)(t->count + 1);
    return (int32_t)t->count++;
}
