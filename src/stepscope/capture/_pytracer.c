/*
 * C profile function for stepscope's Python tracer (python_tracer_level=1).
 *
 * Why C: a profile function written in Python costs about a microsecond per call and slows a
 * call-heavy program 25x; in C it is a push on CALL and an append on RETURN, close to
 * cProfile's cost. Semantics match the pure-Python tracer (python_tracer/setprofile.py) exactly:
 * - one Recorder per thread, installed with PyEval_SetProfile on that thread;
 * - CALL pushes (code, now); RETURN pops it and, while recording and if the shared budget
 *   (an itertools.count compared with max_events) allows, appends (code, start, end, depth);
 * - frames of stepscope's own capture code (co_filename in the set configure() was given) are
 *   popped without taking from the budget: the saver drops them, so max_events is spent only
 *   on events the profile keeps;
 * - C function calls are ignored; while paused the stack is kept balanced but nothing is kept;
 *   once stopped, a thread unhooks itself at its next event.
 * Times are CLOCK_MONOTONIC nanoseconds, the clock of time.perf_counter_ns() on Linux
 * (python_tracer/c_backend.py checks that before using this module).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../_native.h"
#include <frameobject.h>
#include <stdint.h>
#include <time.h>

enum { MODE_PAUSED = 0, MODE_RECORDING = 1, MODE_STOPPED = 2 };

typedef struct {
    PyObject *code; /* strong reference */
    int64_t start;
} Frame;

typedef struct {
    PyObject *code; /* strong reference */
    int64_t start;
    int64_t end;
    int32_t depth;
} Event;

typedef struct {
    PyObject_HEAD
    Frame *stack;
    Py_ssize_t depth, stack_cap;
    Event *events;
    Py_ssize_t n_events, events_cap;
    long generation; /* the session that hooked it */
} Recorder;

static int g_mode = MODE_PAUSED;
static long g_generation = 0;          /* bumped by configure(): one per session */
static PyObject *g_counter = NULL;     /* itertools.count shared with the host tracer */
static long long g_max_events = 0;
static PyObject *g_report_full = NULL; /* called once when the budget runs out */
static PyObject *g_internal = NULL;    /* frozenset of co_filenames never recorded */

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int push(Recorder *r, PyObject *code, int64_t start) {
    if (r->depth == r->stack_cap) {
        Py_ssize_t cap = r->stack_cap ? r->stack_cap * 2 : 64;
        Frame *grown = PyMem_Realloc(r->stack, cap * sizeof(Frame));
        if (grown == NULL) {
            Py_DECREF(code);
            return -1;
        }
        r->stack = grown;
        r->stack_cap = cap;
    }
    r->stack[r->depth].code = code; /* steals the reference */
    r->stack[r->depth].start = start;
    r->depth++;
    return 0;
}

/* Returns 1 if one more event may be kept, 0 if not; -1 on error. */
static int admit(void) {
    if (g_counter == NULL) return 0; /* hooked before configure(): no budget, nothing kept */
    PyObject *value = Py_TYPE(g_counter)->tp_iternext(g_counter);
    if (value == NULL) return -1;
    long long n = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (n < g_max_events) return 1;
    if (n == g_max_events && g_report_full != NULL) {
        PyObject *res = PyObject_CallNoArgs(g_report_full);
        if (res == NULL) return -1;
        Py_DECREF(res);
    }
    return 0;
}

static int on_return(Recorder *r) {
    if (r->depth == 0) return 0; /* a frame that was running before we hooked this thread */
    Frame top = r->stack[--r->depth];
    if (g_mode != MODE_RECORDING) {
        Py_DECREF(top.code);
        return 0;
    }
    int64_t end = now_ns();
    if (g_internal != NULL) {
        int internal = PySet_Contains(g_internal, ((PyCodeObject *)top.code)->co_filename);
        if (internal != 0) { /* stepscope's own frame (1), or an error (-1) */
            Py_DECREF(top.code);
            return internal < 0 ? -1 : 0;
        }
    }
    int ok = admit();
    if (ok <= 0) {
        Py_DECREF(top.code);
        return ok;
    }
    if (r->n_events == r->events_cap) {
        Py_ssize_t cap = r->events_cap ? r->events_cap * 2 : 1024;
        Event *grown = PyMem_Realloc(r->events, cap * sizeof(Event));
        if (grown == NULL) {
            Py_DECREF(top.code);
            PyErr_NoMemory();
            return -1;
        }
        r->events = grown;
        r->events_cap = cap;
    }
    Event *e = &r->events[r->n_events++];
    e->code = top.code; /* moves the reference */
    e->start = top.start;
    e->end = end;
    e->depth = (int32_t)r->depth;
    return 0;
}

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    Recorder *r = (Recorder *)obj;
    if (g_mode == MODE_STOPPED || r->generation != g_generation) {
        PyEval_SetProfile(NULL, NULL); /* threads stop() cannot reach unhook themselves */
        return 0;
    }
    if (what == PyTrace_CALL) {
        PyObject *code = (PyObject *)PyFrame_GetCode(frame); /* new reference */
        return push(r, code, now_ns());
    }
    if (what == PyTrace_RETURN) return on_return(r);
    return 0;
}

/* ---- Recorder type ----------------------------------------------------------------------- */

static void recorder_clear_data(Recorder *r) {
    for (Py_ssize_t i = 0; i < r->depth; i++) Py_DECREF(r->stack[i].code);
    for (Py_ssize_t i = 0; i < r->n_events; i++) Py_DECREF(r->events[i].code);
    PyMem_Free(r->stack);
    PyMem_Free(r->events);
    r->stack = NULL;
    r->events = NULL;
    r->depth = r->stack_cap = r->n_events = r->events_cap = 0;
}

static void recorder_dealloc(Recorder *r) {
    recorder_clear_data(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *recorder_events(Recorder *r, PyObject *unused) {
    PyObject *out = PyList_New(r->n_events);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < r->n_events; i++) {
        Event *e = &r->events[i];
        PyObject *item = Py_BuildValue("(OLLi)", e->code, (long long)e->start,
                                       (long long)e->end, (int)e->depth);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *recorder_stack(Recorder *r, PyObject *unused) {
    PyObject *out = PyList_New(r->depth);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < r->depth; i++) {
        PyObject *item = Py_BuildValue("(OL)", r->stack[i].code, (long long)r->stack[i].start);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *recorder_clear(Recorder *r, PyObject *unused) {
    recorder_clear_data(r);
    Py_RETURN_NONE;
}

static PyMethodDef recorder_methods[] = {
    {"events", (PyCFunction)recorder_events, METH_NOARGS,
     "Recorded calls as [(code, start_ns, end_ns, depth)]."},
    {"stack", (PyCFunction)recorder_stack, METH_NOARGS, "Open calls as [(code, start_ns)]."},
    {"clear", (PyCFunction)recorder_clear, METH_NOARGS, "Free the recorded data."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stepscope.capture._pytracer.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One thread's Python calls, recorded by the C profile function.",
    .tp_methods = recorder_methods,
    .tp_new = PyType_GenericNew,
};

/* ---- module functions -------------------------------------------------------------------- */

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *counter, *report_full, *internal = NULL;
    long long max_events;
    if (!PyArg_ParseTuple(args, "OLO|O", &counter, &max_events, &report_full, &internal))
        return NULL;
    if (Py_TYPE(counter)->tp_iternext == NULL) {
        PyErr_SetString(PyExc_TypeError, "counter must be an iterator (itertools.count)");
        return NULL;
    }
    if (internal == Py_None) internal = NULL;
    if (internal != NULL && !PyFrozenSet_Check(internal)) {
        PyErr_SetString(PyExc_TypeError, "internal must be a frozenset of file names");
        return NULL;
    }
    Py_INCREF(counter);
    Py_INCREF(report_full);
    Py_XINCREF(internal);
    Py_XSETREF(g_counter, counter);
    Py_XSETREF(g_report_full, report_full);
    Py_XSETREF(g_internal, internal);
    g_max_events = max_events;
    g_mode = MODE_PAUSED;
    g_generation++;
    Py_RETURN_NONE;
}

static PyObject *set_mode(PyObject *self, PyObject *args) {
    int mode;
    if (!PyArg_ParseTuple(args, "i", &mode)) return NULL;
    if (mode != MODE_PAUSED && mode != MODE_RECORDING && mode != MODE_STOPPED) {
        PyErr_SetString(PyExc_ValueError, "set_mode: 0 (paused), 1 (recording) or 2 (stopped)");
        return NULL;
    }
    g_mode = mode;
    Py_RETURN_NONE;
}

/* hook_current_thread(open_frames) -> Recorder: install on the calling thread, with the
 * frames already running there ([(code, start_ns)], outermost first) on its stack. */
static PyObject *hook_current_thread(PyObject *self, PyObject *open_frames) {
    if (!PyList_Check(open_frames)) {
        PyErr_SetString(PyExc_TypeError, "open_frames must be a list");
        return NULL;
    }
    Recorder *r = (Recorder *)PyType_GenericNew(&RecorderType, NULL, NULL);
    if (r == NULL) return NULL;
    r->generation = g_generation;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(open_frames); i++) {
        PyObject *code, *item = PyList_GET_ITEM(open_frames, i);
        long long start;
        if (!PyTuple_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "open_frames: (code, start_ns) tuples expected");
            Py_DECREF(r);
            return NULL;
        }
        if (!PyArg_ParseTuple(item, "OL", &code, &start)) {
            Py_DECREF(r);
            return NULL;
        }
        Py_INCREF(code);
        if (push(r, code, start) < 0) {
            Py_DECREF(r);
            return PyErr_NoMemory();
        }
    }
    PyEval_SetProfile(profile, (PyObject *)r); /* holds its own reference */
    return (PyObject *)r;
}

static PyObject *unhook_current_thread(PyObject *self, PyObject *unused) {
    PyEval_SetProfile(NULL, NULL);
    Py_RETURN_NONE;
}

static PyObject *now(PyObject *self, PyObject *unused) { return PyLong_FromLongLong(now_ns()); }

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(counter, max_events, report_full, internal_files=None)"},
    {"set_mode", set_mode, METH_VARARGS, "set_mode(0 paused | 1 recording | 2 stopped)"},
    {"hook_current_thread", hook_current_thread, METH_O, "Install on this thread."},
    {"unhook_current_thread", unhook_current_thread, METH_NOARGS, "Remove from this thread."},
    {"now", now, METH_NOARGS, "The tracer's clock in ns (must equal perf_counter_ns)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_pytracer", "C profile function for stepscope's Python tracer.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pytracer(void) {
    if (PyType_Ready(&RecorderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    Py_INCREF(&RecorderType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return stamped(m);
}
