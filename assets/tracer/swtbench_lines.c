/* _swtbench_lines: the native line counter of swtbench's coverage tracer (trace.py).
 *
 * trace.py counts, on Python 3.5-3.11, what a plain sys.settrace line counter counts: a global
 * trace function decides on each "call" event whether the frame is traced (the __file__ of its
 * globals fully matches the include pattern, cached per __file__ value) and, if so, returns a
 * local trace function bound to the counter of the frame's co_filename, which adds one hit to
 * the frame's line on every "line" event. This module does the same in C, for the same events:
 *
 * - Tracer(matcher) is the global trace function. Installed with PyEval_SetTrace (start(), and
 *   for threads started through `threading` on their first event), it receives every event of
 *   every frame and does what sys.settrace's trampoline does with a Python trace function:
 *   "call" events go to the include decision, which stores the file's counter in the frame's
 *   f_trace; every other event goes to the frame's f_trace, if any. A Counter there counts
 *   "line" events without calling anything; any other f_trace (a debugger's, set on a frame) is
 *   called as the trampoline calls it.
 * - Tracer and Counter objects are also callable like the Python functions they replace, so a
 *   program that saves sys.gettrace() and restores it with sys.settrace() (or chains to it from
 *   its own trace function) keeps the same counts. The first "call" event a thread delivers
 *   through sys.settrace's trampoline with the tracer as its trace function switches that
 *   thread to the C trace function.
 * - Where the Python trace functions would have called Python code, the same recursion-depth
 *   checks are made (Py_EnterRecursiveCall, as many levels as those calls took on this Python),
 *   and an error ends tracing for the thread as the trampoline does, so that a program that
 *   recurses to the limit sees its RecursionError at the same depth and the counts stop where
 *   the original's stopped.
 *
 * Counts are kept per co_filename in arrays indexed by line. snapshot() returns
 * {co_filename: {line: hits}} with the lines that were hit; clear() forgets every hit (a forked
 * child starts from nothing). Python 3.12 and later are not supported: trace.py uses
 * sys.monitoring there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX < 0x03050000 || PY_VERSION_HEX >= 0x030C0000
#error "_swtbench_lines supports CPython 3.5 to 3.11 (trace.py uses sys.monitoring on 3.12+)"
#endif

#if PY_VERSION_HEX >= 0x030B0000
/* 3.11 keeps the frame object's fields (f_trace) and the interpreter frame (globals, code) in
 * internal headers; they are installed with the public ones. */
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#include "internal/pycore_frame.h"
#define FRAME_GLOBALS(f) ((f)->f_frame->f_globals)
#define FRAME_CODE(f) ((f)->f_frame->f_code)
#else
#define FRAME_GLOBALS(f) ((f)->f_globals)
#define FRAME_CODE(f) ((f)->f_code)
#endif
#define FRAME_TRACE(f) ((f)->f_trace)

#ifndef Py_XSETREF /* before 3.5.2 */
#define Py_XSETREF(op, op2)                  \
    do {                                     \
        PyObject *_py_tmp = (PyObject *)(op); \
        (op) = (op2);                        \
        Py_XDECREF(_py_tmp);                 \
    } while (0)
#endif

#define MODULE_VERSION "1"

/* Lines at or above this are counted in a dict instead of the array. */
#define ARRAY_LINES (1 << 20)

/* ---------------------------------------------------------------------------------------------
 * Recursion depth of the calls the Python trace functions made
 *
 * The pure-Python counter's trace functions are Python code: every event they handle enters one
 * or more recursion checks (a Python frame, a call of a C function or type, a comparison), so a
 * program that recurses to the limit gets its RecursionError a few levels earlier, raised inside
 * the trace function, which also ends tracing for the thread. The native counter makes the same
 * checks in the same order. Each path below is a sequence of operations: 'f' enters a frame's
 * check, 'c' a call's, 'q' a comparison's, ')' leaves the innermost. They were measured against
 * the pure-Python counter on each Python (the recursion fixture of the tracer's tests: the same
 * RecursionError, at the same depth, with the same message and the same counts).
 *
 * CALL_START    a "call" event: the global trace function and is_included, up to the cache
 * CALL_MISS     a __file__ value not cached yet (inside is_included)
 * CALL_DECIDED  leaving is_included
 * NEW_COUNTER   the first traced code of a co_filename (the counter and the local function made)
 * CALL_END      leaving the global trace function
 * LOCAL         any other event of a traced frame (the local trace function)
 * FIRST_HIT     a "line" event of a line without hits yet (the defaultdict makes the entry)
 */
#if PY_VERSION_HEX < 0x03070000
/* The trampoline calls through _PyObject_FastCall / PyObject_Call, which checks too. */
#define CALL_START "cff"
#define CALL_MISS "c)"
#define CALL_DECIDED ")"
#define NEW_COUNTER "fcfq)))"
#define CALL_END "))"
#define LOCAL "cf))"
#define FIRST_HIT "cfcc))))"
#elif PY_VERSION_HEX < 0x030B0000
/* Calls of methods of C types check (frame_globals.get). */
#define CALL_START "ffc)"
#define CALL_MISS "c)"
#define CALL_DECIDED ")"
#define NEW_COUNTER "fc)fc)))"
#define CALL_END ")"
#define LOCAL "f)"
#define FIRST_HIT "fcc)))"
#else
/* 3.11 runs the hot calls through specialised instructions that do not check. */
#define CALL_START "ff"
#define CALL_MISS "c)"
#define CALL_DECIDED ")"
#define NEW_COUNTER "fc)f))"
#define CALL_END ")"
#define LOCAL "f)"
#define FIRST_HIT "fcc)))"
#endif

/* Runs the operations of one path; *depth counts the levels entered and not yet left. On a
 * failed check, every level entered is left and -1 is returned with RecursionError set. */
static int
run_checks(const char *ops, int *depth)
{
    for (; *ops; ops++) {
        const char *where;
        switch (*ops) {
        case ')':
            Py_LeaveRecursiveCall();
            --*depth;
            continue;
        case 'f':
            where = "";
            break;
        case 'c':
            where = " while calling a Python object";
            break;
        default:
            where = " in comparison";
            break;
        }
        if (Py_EnterRecursiveCall(where)) {
            while (*depth > 0) {
                Py_LeaveRecursiveCall();
                --*depth;
            }
            return -1;
        }
        ++*depth;
    }
    return 0;
}

static void
leave_checks(int *depth)
{
    while (*depth > 0) {
        Py_LeaveRecursiveCall();
        --*depth;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Counter: the hits of one co_filename, and the local trace function bound to it */

typedef struct {
    PyObject_HEAD
    PyObject *filename;
    unsigned long long *counts;
    Py_ssize_t size;
    PyObject *other; /* {line: hits} for lines outside the array, or NULL */
} Counter;

static PyTypeObject CounterType;
static PyTypeObject TracerType;

static PyObject *str_file;   /* "__file__" */
static PyObject *str_get;    /* "get" */
static PyObject *str_line;   /* "line" */
static PyObject *one;        /* 1 */
static PyObject *event_names[8];

static Counter *
counter_new(PyObject *filename)
{
    Counter *self = PyObject_New(Counter, &CounterType);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(filename);
    self->filename = filename;
    self->counts = NULL;
    self->size = 0;
    self->other = NULL;
    return self;
}

static void
counter_dealloc(Counter *self)
{
    Py_XDECREF(self->filename);
    Py_XDECREF(self->other);
    PyMem_Free(self->counts);
    PyObject_Del(self);
}

/* The key the Python counter used for a line: frame.f_lineno, None for a negative line on 3.10+
 * (where f_lineno is None then). */
static PyObject *
line_key(int line)
{
#if PY_VERSION_HEX >= 0x030A0000
    if (line < 0) {
        Py_RETURN_NONE;
    }
#endif
    return PyLong_FromLong(line);
}

static int
counter_hit(Counter *self, int line)
{
    if (line >= 0 && line < ARRAY_LINES) {
        if (line >= self->size) {
            Py_ssize_t size = self->size ? self->size : 256;
            unsigned long long *grown;
            while (size <= line) {
                size *= 2;
            }
            grown = PyMem_Realloc(self->counts, (size_t)size * sizeof(unsigned long long));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            memset(grown + self->size, 0, (size_t)(size - self->size) * sizeof(unsigned long long));
            self->counts = grown;
            self->size = size;
        }
        self->counts[line]++;
        return 0;
    }
    {
        PyObject *key, *old, *new_value;
        int result;
        if (self->other == NULL && (self->other = PyDict_New()) == NULL) {
            return -1;
        }
        if ((key = line_key(line)) == NULL) {
            return -1;
        }
        old = PyDict_GetItemWithError(self->other, key);
        if (old == NULL && PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
        }
        new_value = old ? PyNumber_Add(old, one) : PyLong_FromLong(1);
        if (new_value == NULL) {
            Py_DECREF(key);
            return -1;
        }
        result = PyDict_SetItem(self->other, key, new_value);
        Py_DECREF(key);
        Py_DECREF(new_value);
        return result;
    }
}

/* Whether the line has hits already. */
static int
counter_has(Counter *self, int line)
{
    if (line >= 0 && line < ARRAY_LINES) {
        return line < self->size && self->counts[line] != 0;
    }
    if (self->other != NULL) {
        PyObject *key = line_key(line);
        int found = key != NULL && PyDict_GetItemWithError(self->other, key) != NULL;
        Py_XDECREF(key);
        PyErr_Clear();
        return found;
    }
    return 0;
}

static int
counter_is_empty(Counter *self)
{
    Py_ssize_t i;
    if (self->other != NULL && PyDict_Size(self->other) > 0) {
        return 0;
    }
    for (i = 0; i < self->size; i++) {
        if (self->counts[i]) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
counter_hits(Counter *self)
{
    Py_ssize_t i;
    PyObject *hits = self->other ? PyDict_Copy(self->other) : PyDict_New();
    if (hits == NULL) {
        return NULL;
    }
    for (i = 0; i < self->size; i++) {
        if (self->counts[i]) {
            PyObject *key = PyLong_FromSsize_t(i);
            PyObject *value = PyLong_FromUnsignedLongLong(self->counts[i]);
            int failed = key == NULL || value == NULL || PyDict_SetItem(hits, key, value) < 0;
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (failed) {
                Py_DECREF(hits);
                return NULL;
            }
        }
    }
    return hits;
}

static void
counter_clear(Counter *self)
{
    if (self->counts != NULL) {
        memset(self->counts, 0, (size_t)self->size * sizeof(unsigned long long));
    }
    Py_CLEAR(self->other);
}

/* Called as a Python local trace function: counts a "line" event and returns itself. */
static PyObject *
counter_call(Counter *self, PyObject *args, PyObject *kwargs)
{
    PyObject *frame, *event, *arg;
    static char *keywords[] = {"frame", "event", "arg", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:local_trace", keywords, &frame, &event,
                                     &arg)) {
        return NULL;
    }
    if (PyUnicode_Check(event)) {
        int equal = PyUnicode_Compare(event, str_line);
        if (equal == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (equal == 0) {
            if (!PyFrame_Check(frame)) {
                PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'f_lineno'",
                             Py_TYPE(frame)->tp_name);
                return NULL;
            }
            if (counter_hit(self, PyFrame_GetLineNumber((PyFrameObject *)frame)) < 0) {
                return NULL;
            }
        }
    }
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
counter_repr(Counter *self)
{
    return PyUnicode_FromFormat("<swtbench line counter of %R>", self->filename);
}

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "_swtbench_lines.Counter",   /* tp_name */
    sizeof(Counter),             /* tp_basicsize */
    0,                           /* tp_itemsize */
    (destructor)counter_dealloc, /* tp_dealloc */
    0,                           /* tp_print / tp_vectorcall_offset */
    0,                           /* tp_getattr */
    0,                           /* tp_setattr */
    0,                           /* tp_as_async */
    (reprfunc)counter_repr,      /* tp_repr */
    0,                           /* tp_as_number */
    0,                           /* tp_as_sequence */
    0,                           /* tp_as_mapping */
    0,                           /* tp_hash */
    (ternaryfunc)counter_call,   /* tp_call */
    0,                           /* tp_str */
    0,                           /* tp_getattro */
    0,                           /* tp_setattro */
    0,                           /* tp_as_buffer */
    Py_TPFLAGS_DEFAULT,          /* tp_flags */
    "The hits of one source file; called as a local trace function, counts 'line' events.",
};

/* ---------------------------------------------------------------------------------------------
 * Tracer: the include decision and the C trace function */

typedef struct {
    PyObject_HEAD
    PyObject *matcher;  /* fullmatch of the include pattern */
    PyObject *cache;    /* {__file__ value: True/False} */
    PyObject *counters; /* {co_filename: Counter} */
} Tracer;

static int native_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* frame_globals.get("__file__"): a new reference, or NULL with an error set. */
static PyObject *
globals_file(PyObject *globals)
{
    if (PyDict_CheckExact(globals)) {
        PyObject *value = PyDict_GetItemWithError(globals, str_file);
        if (value == NULL) {
            if (PyErr_Occurred()) {
                return NULL;
            }
            value = Py_None;
        }
        Py_INCREF(value);
        return value;
    }
    return PyObject_CallMethodObjArgs(globals, str_get, str_file, NULL);
}

/* Whether code running with these globals is traced: 1, 0, or -1 with an error set. depth is
 * NULL when called from Python (the call itself was checked), else the recursion checks of the
 * Python function are made. */
static int
is_included(Tracer *self, PyObject *globals, int *depth)
{
    PyObject *filename, *cached, *match;
    int result;
    if ((filename = globals_file(globals)) == NULL) {
        return -1;
    }
    cached = PyDict_GetItemWithError(self->cache, filename);
    if (cached != NULL) {
        Py_DECREF(filename);
        return cached == Py_True;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(filename);
        if (PyErr_ExceptionMatches(PyExc_TypeError)) { /* an unhashable __file__ */
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    if (depth != NULL && run_checks(CALL_MISS, depth) < 0) {
        Py_DECREF(filename);
        return -1;
    }
    result = 0;
    if (PyUnicode_Check(filename)) {
        match = PyObject_CallFunctionObjArgs(self->matcher, filename, NULL);
        if (match == NULL) {
            Py_DECREF(filename);
            return -1;
        }
        result = match != Py_None;
        Py_DECREF(match);
    }
    if (PyDict_SetItem(self->cache, filename, result ? Py_True : Py_False) < 0) {
        Py_DECREF(filename);
        return -1;
    }
    Py_DECREF(filename);
    return result;
}

/* The global trace function's answer for a frame: a borrowed Counter, NULL when the frame is not
 * traced (no error set), or NULL with an error set. */
static Counter *
decide(Tracer *self, PyFrameObject *frame, int *depth)
{
    PyObject *filename;
    Counter *counter;
    int included = is_included(self, FRAME_GLOBALS(frame), depth);
    if (included < 0 || (depth != NULL && run_checks(CALL_DECIDED, depth) < 0) || included == 0) {
        return NULL;
    }
    filename = FRAME_CODE(frame)->co_filename;
    counter = (Counter *)PyDict_GetItemWithError(self->counters, filename);
    if (counter != NULL || PyErr_Occurred()) {
        return counter;
    }
    if (depth != NULL && run_checks(NEW_COUNTER, depth) < 0) {
        return NULL;
    }
    if ((counter = counter_new(filename)) == NULL) {
        return NULL;
    }
    if (PyDict_SetItem(self->counters, filename, (PyObject *)counter) < 0) {
        Py_DECREF(counter);
        return NULL;
    }
    Py_DECREF(counter); /* the dict keeps it */
    return counter;
}

/* ---------------------------------------------------------------------------------------------
 * The frame's locals dict around a Python trace function call
 *
 * Before calling a Python trace function, sys.settrace's trampoline copies the frame's fast
 * locals into its locals dict, and copies them back after the call. A dict the program already
 * holds (d = locals()) therefore shows later assignments under the Python counter (on 3.11 only
 * at the first event after locals() was called). The native counter does the same for every
 * event on which the Python counter called a function, for frames whose locals dict exists: a
 * dict nobody asked for cannot be seen, and whoever asks for it gets a fresh copy anyway. */
static int
locals_before(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    if (frame->f_fast_as_locals) {
        return PyFrame_FastToLocalsWithError(frame);
    }
#else
    if ((FRAME_CODE(frame)->co_flags & CO_OPTIMIZED) && frame->f_locals != NULL) {
        return PyFrame_FastToLocalsWithError(frame);
    }
#endif
    return 0;
}

static void
locals_after(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyFrame_LocalsToFast(frame, 1); /* only acts after a copy (f_fast_as_locals) */
#else
    if ((FRAME_CODE(frame)->co_flags & CO_OPTIMIZED) && frame->f_locals != NULL) {
        PyFrame_LocalsToFast(frame, 1);
    }
#endif
}

/* What the trampoline does when a Python trace function raises: tracing ends for the thread
 * (and before 3.11 the frame is added to the traceback). */
static int
trace_failed(PyFrameObject *frame)
{
#if PY_VERSION_HEX < 0x030B0000
    PyTraceBack_Here(frame);
#endif
    PyEval_SetTrace(NULL, NULL);
    Py_CLEAR(FRAME_TRACE(frame));
    return -1;
}

/* Calls a trace function that is not ours (set on the frame by someone else) the way
 * sys.settrace's trampoline calls a Python one. */
static int
call_foreign(PyObject *callback, PyFrameObject *frame, int what, PyObject *arg)
{
    PyObject *result;
#if PY_VERSION_HEX >= 0x030B0000
    if (frame->f_fast_as_locals && PyFrame_FastToLocalsWithError(frame) < 0) {
        return trace_failed(frame);
    }
#else
    if (PyFrame_FastToLocalsWithError(frame) < 0) {
        return trace_failed(frame);
    }
#endif
    Py_INCREF(callback);
    result = PyObject_CallFunctionObjArgs(callback, (PyObject *)frame, event_names[what],
                                          arg != NULL ? arg : Py_None, NULL);
    Py_DECREF(callback);
    PyFrame_LocalsToFast(frame, 1);
    if (result == NULL) {
        return trace_failed(frame);
    }
    if (result != Py_None) {
        Py_XSETREF(FRAME_TRACE(frame), result);
    }
    else {
        Py_DECREF(result);
    }
    return 0;
}

static int
native_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    PyObject *callback;
    if (what == PyTrace_CALL) {
        Counter *counter = NULL;
        int depth = 0;
        if (locals_before(frame) < 0) {
            return trace_failed(frame);
        }
        if (run_checks(CALL_START, &depth) == 0) {
            counter = decide((Tracer *)obj, frame, &depth);
            if (counter != NULL || !PyErr_Occurred()) {
                run_checks(CALL_END, &depth);
            }
        }
        leave_checks(&depth);
        locals_after(frame);
        if (PyErr_Occurred()) {
            return trace_failed(frame);
        }
        if (counter == NULL) {
            return 0;
        }
        Py_INCREF(counter);
        Py_XSETREF(FRAME_TRACE(frame), (PyObject *)counter);
        return 0;
    }
    callback = FRAME_TRACE(frame);
    if (callback == NULL) {
        return 0;
    }
    if (Py_TYPE(callback) == &CounterType) {
        Counter *counter = (Counter *)callback;
        int depth = 0;
        int line = what == PyTrace_LINE ? PyFrame_GetLineNumber(frame) : 0;
        const char *checks = what == PyTrace_LINE && !counter_has(counter, line) ? FIRST_HIT : LOCAL;
        int failed = locals_before(frame) < 0 || run_checks(checks, &depth) < 0;
        leave_checks(&depth);
        if (!failed && what == PyTrace_LINE) {
            failed = counter_hit(counter, line) < 0;
        }
        locals_after(frame);
        return failed ? trace_failed(frame) : 0;
    }
    if (what < 0 || what >= (int)(sizeof(event_names) / sizeof(event_names[0]))) {
        return 0;
    }
    return call_foreign(callback, frame, what, arg);
}

static PyObject *
tracer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *matcher;
    Tracer *self;
    static char *keywords[] = {"matcher", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Tracer", keywords, &matcher)) {
        return NULL;
    }
    if (!PyCallable_Check(matcher)) {
        PyErr_SetString(PyExc_TypeError, "Tracer(matcher): matcher must be callable");
        return NULL;
    }
    self = (Tracer *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(matcher);
    self->matcher = matcher;
    self->cache = PyDict_New();
    self->counters = PyDict_New();
    if (self->cache == NULL || self->counters == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
tracer_dealloc(Tracer *self)
{
    Py_XDECREF(self->matcher);
    Py_XDECREF(self->cache);
    Py_XDECREF(self->counters);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Called as a Python global trace function: the include decision for the frame (whatever the
 * event, as the Python function did). On a "call" event delivered by sys.settrace's trampoline
 * with this tracer as the thread's trace function, the thread switches to the C trace function
 * first. */
static PyObject *
tracer_call(Tracer *self, PyObject *args, PyObject *kwargs)
{
    PyObject *frame, *event, *arg;
    Counter *counter;
    PyThreadState *tstate;
    static char *keywords[] = {"frame", "event", "arg", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:global_trace", keywords, &frame, &event,
                                     &arg)) {
        return NULL;
    }
    if (!PyFrame_Check(frame)) {
        PyErr_Format(PyExc_AttributeError, "'%.100s' object has no attribute 'f_globals'",
                     Py_TYPE(frame)->tp_name);
        return NULL;
    }
    tstate = PyThreadState_Get();
    if (tstate->c_traceobj == (PyObject *)self && tstate->c_tracefunc != native_trace &&
        PyUnicode_Check(event) && PyUnicode_Compare(event, event_names[PyTrace_CALL]) == 0) {
        Py_INCREF(self);
        PyEval_SetTrace(native_trace, (PyObject *)self);
        Py_DECREF(self);
    }
    counter = decide(self, (PyFrameObject *)frame, NULL);
    if (counter == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    Py_INCREF(counter);
    return (PyObject *)counter;
}

static PyObject *
tracer_start(Tracer *self, PyObject *unused)
{
    PyEval_SetTrace(native_trace, (PyObject *)self);
    Py_RETURN_NONE;
}

static PyObject *
tracer_snapshot(Tracer *self, PyObject *unused)
{
    PyObject *result = PyDict_New();
    PyObject *filename, *value;
    Py_ssize_t pos = 0;
    if (result == NULL) {
        return NULL;
    }
    while (PyDict_Next(self->counters, &pos, &filename, &value)) {
        PyObject *hits;
        Counter *counter = (Counter *)value;
        if (counter_is_empty(counter)) {
            continue;
        }
        if ((hits = counter_hits(counter)) == NULL || PyDict_SetItem(result, filename, hits) < 0) {
            Py_XDECREF(hits);
            Py_DECREF(result);
            return NULL;
        }
        Py_DECREF(hits);
    }
    return result;
}

static PyObject *
tracer_clear(Tracer *self, PyObject *unused)
{
    PyObject *filename, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(self->counters, &pos, &filename, &value)) {
        counter_clear((Counter *)value);
    }
    Py_RETURN_NONE;
}

static PyMethodDef tracer_methods[] = {
    {"start", (PyCFunction)tracer_start, METH_NOARGS,
     "Installs the C trace function for the calling thread."},
    {"snapshot", (PyCFunction)tracer_snapshot, METH_NOARGS,
     "{co_filename: {line: hits}} of the lines hit so far."},
    {"clear", (PyCFunction)tracer_clear, METH_NOARGS, "Forgets every hit."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TracerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "_swtbench_lines.Tracer",   /* tp_name */
    sizeof(Tracer),             /* tp_basicsize */
    0,                          /* tp_itemsize */
    (destructor)tracer_dealloc, /* tp_dealloc */
    0,                          /* tp_print / tp_vectorcall_offset */
    0,                          /* tp_getattr */
    0,                          /* tp_setattr */
    0,                          /* tp_as_async */
    0,                          /* tp_repr */
    0,                          /* tp_as_number */
    0,                          /* tp_as_sequence */
    0,                          /* tp_as_mapping */
    0,                          /* tp_hash */
    (ternaryfunc)tracer_call,   /* tp_call */
    0,                          /* tp_str */
    0,                          /* tp_getattro */
    0,                          /* tp_setattro */
    0,                          /* tp_as_buffer */
    Py_TPFLAGS_DEFAULT,         /* tp_flags */
    "Tracer(matcher): the global trace function of the line counter.",
    0,                          /* tp_traverse */
    0,                          /* tp_clear */
    0,                          /* tp_richcompare */
    0,                          /* tp_weaklistoffset */
    0,                          /* tp_iter */
    0,                          /* tp_iternext */
    tracer_methods,             /* tp_methods */
    0,                          /* tp_members */
    0,                          /* tp_getset */
    0,                          /* tp_base */
    0,                          /* tp_dict */
    0,                          /* tp_descr_get */
    0,                          /* tp_descr_set */
    0,                          /* tp_dictoffset */
    0,                          /* tp_init */
    0,                          /* tp_alloc */
    tracer_new,                 /* tp_new */
};

/* ---------------------------------------------------------------------------------------------
 * The module (multi-phase initialisation: loading it does not touch sys.modules) */

static int
module_exec(PyObject *module)
{
    static const char *const names[] = {
        "call", "exception", "line", "return", "c_call", "c_exception", "c_return", "opcode",
    };
    size_t i;
    if (str_file == NULL) {
        str_file = PyUnicode_InternFromString("__file__");
        str_get = PyUnicode_InternFromString("get");
        str_line = PyUnicode_InternFromString("line");
        one = PyLong_FromLong(1);
        if (str_file == NULL || str_get == NULL || str_line == NULL || one == NULL) {
            return -1;
        }
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if ((event_names[i] = PyUnicode_InternFromString(names[i])) == NULL) {
                return -1;
            }
        }
    }
    if (PyType_Ready(&CounterType) < 0 || PyType_Ready(&TracerType) < 0) {
        return -1;
    }
    Py_INCREF(&TracerType);
    if (PyModule_AddObject(module, "Tracer", (PyObject *)&TracerType) < 0) {
        Py_DECREF(&TracerType);
        return -1;
    }
    Py_INCREF(&CounterType);
    if (PyModule_AddObject(module, "Counter", (PyObject *)&CounterType) < 0) {
        Py_DECREF(&CounterType);
        return -1;
    }
    return PyModule_AddStringConstant(module, "VERSION", MODULE_VERSION);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void *)module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_swtbench_lines",
    "The native line counter of swtbench's coverage tracer (trace.py).",
    0,
    NULL,
    module_slots,
};

PyMODINIT_FUNC
PyInit__swtbench_lines(void)
{
    return PyModuleDef_Init(&module_def);
}
