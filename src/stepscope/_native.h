/* Included by every C extension of stepscope (after <Python.h>): the build stamp that the
 * loader (stepscope/accelerators.py) compares with the sources, and the argument checks and
 * checked arithmetic that every entry point uses before it touches memory.
 *
 * The rule for entry points (CONTRIBUTING.md, "native code"): every argument is checked
 * before the first read through it (type, item size, alignment, length, index ranges,
 * counts), and arithmetic on values read from a profile (times, durations, sizes, offsets) is
 * checked or provably bounded; a bad argument raises ValueError/TypeError, never reads or
 * writes outside a buffer. Signed overflow is undefined in C even where Python builds with
 * -fwrapv: the sanitizer build (setup.py STEPSCOPE_SANITIZE=1) turns -fwrapv off to see it. */
#ifndef STEPSCOPE_NATIVE_H
#define STEPSCOPE_NATIVE_H

#include <stdint.h>

/* setup.py defines it as the hash of the extension's sources (accelerators.source_hash). A
 * build made another way has none, and the loader takes it for stale. */
#ifndef STEPSCOPE_BUILD_HASH
#define STEPSCOPE_BUILD_HASH ""
#endif

/* The module, with its BUILD_HASH added; NULL (and the module released) on failure. */
static inline PyObject *stamped(PyObject *m) {
    if (m && PyModule_AddStringConstant(m, "BUILD_HASH", STEPSCOPE_BUILD_HASH) < 0) Py_CLEAR(m);
    return m;
}

/* obj's buffer as a C-contiguous array of `itemsize`-byte items, aligned for them, writable
 * when asked: 0, or -1 with an exception set and nothing held. `what` names the argument. */
static inline int native_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize,
                               int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->len % itemsize || (view->len && (uintptr_t)view->buf % (uintptr_t)itemsize)) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: an aligned array of %zd-byte items expected", what,
                     itemsize);
        return -1;
    }
    return 0;
}

/* a + b, a - b and a * b into *out; 0 when the result does not fit in int64. */
static inline int add_ok(int64_t a, int64_t b, int64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    return !__builtin_add_overflow(a, b, out);
#else
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return 0;
    *out = a + b;
    return 1;
#endif
}

static inline int sub_ok(int64_t a, int64_t b, int64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    return !__builtin_sub_overflow(a, b, out);
#else
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return 0;
    *out = a - b;
    return 1;
#endif
}

static inline int mul_ok(int64_t a, int64_t b, int64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    return !__builtin_mul_overflow(a, b, out);
#else
    if (a && b && (a > INT64_MAX / (b < 0 ? -b : b) || a < -(INT64_MAX / (b < 0 ? -b : b))))
        return 0;
    *out = a * b;
    return 1;
#endif
}

#endif
