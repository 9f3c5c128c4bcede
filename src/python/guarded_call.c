/*
 * guarded_call.c - vlcs._isolation._fast.call_guarded: a Python callable
 * run through vlcs_ctx_call, so that a fault in a context's native code
 * (a private extension module, a library it loaded) ends the call, not the
 * process, in a context that shares the base's interpreter.
 *
 * The fault cuts the interpreter short wherever the context's code ran:
 * its frames above this call never return.  What the thread state holds of
 * them is put back as it was when the call began (the current frame, the
 * frame stack's top, the recursion budgets, the exception being handled),
 * the GIL taken back if the fault came while it was released, and the
 * objects those frames referenced are leaked with them.  libvlcs has
 * checked that no frame between the fault and the call was the loader's,
 * libc's or the allocator's; CPython's own frames may be, and the fault
 * may have come in the middle of its work on an object the context's
 * code was given (docs/faults.md says what that means).
 *
 * Built per Python version with the thread state's layout of that version.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "guarded_call.h"

#if PY_VERSION_HEX < 0x030A0000 || PY_VERSION_HEX >= 0x030E0000
#error "the guarded call restores the thread state of CPython 3.10 to 3.13"
#endif

enum { VLCS_E_FAULT = 8 }; /* vlcs.h's, which this module does not include */

typedef int (*ctx_call_fn)(void *ctx, void *(*fn)(void *), void *arg, void **result);

/* What a call's frames change in the thread state, as it was before. */
struct saved {
    PyThreadState *ts;
#if PY_VERSION_HEX >= 0x030D0000
    struct _PyInterpreterFrame *current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    _PyCFrame *cframe;
    struct _PyInterpreterFrame *cframe_current;
#else
    PyFrameObject *frame;
    CFrame *cframe;
#endif
#if PY_VERSION_HEX >= 0x030C0000
    int py_recursion_remaining, c_recursion_remaining;
#elif PY_VERSION_HEX >= 0x030B0000
    int recursion_remaining;
#else
    int recursion_depth;
#endif
#if PY_VERSION_HEX >= 0x030B0000
    _PyStackChunk *datastack_chunk;
    PyObject **datastack_top, **datastack_limit;
#endif
    int tracing;
    _PyErr_StackItem *exc_info;
};

static void save(struct saved *s)
{
    PyThreadState *ts = PyThreadState_Get();
    s->ts = ts;
#if PY_VERSION_HEX >= 0x030D0000
    s->current_frame = ts->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    s->cframe = ts->cframe;
    s->cframe_current = ts->cframe->current_frame;
#else
    s->frame = ts->frame;
    s->cframe = ts->cframe;
#endif
#if PY_VERSION_HEX >= 0x030C0000
    s->py_recursion_remaining = ts->py_recursion_remaining;
    s->c_recursion_remaining = ts->c_recursion_remaining;
#elif PY_VERSION_HEX >= 0x030B0000
    s->recursion_remaining = ts->recursion_remaining;
#else
    s->recursion_depth = ts->recursion_depth;
#endif
#if PY_VERSION_HEX >= 0x030B0000
    s->datastack_chunk = ts->datastack_chunk;
    s->datastack_top = ts->datastack_top;
    s->datastack_limit = ts->datastack_limit;
#endif
    s->tracing = ts->tracing;
    s->exc_info = ts->exc_info;
}

static void restore(const struct saved *s)
{
    PyThreadState *ts = s->ts;
#if PY_VERSION_HEX >= 0x030D0000
    ts->current_frame = s->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    ts->cframe = s->cframe;
    ts->cframe->current_frame = s->cframe_current;
#else
    ts->frame = s->frame;
    ts->cframe = s->cframe;
#endif
#if PY_VERSION_HEX >= 0x030C0000
    ts->py_recursion_remaining = s->py_recursion_remaining;
    ts->c_recursion_remaining = s->c_recursion_remaining;
#elif PY_VERSION_HEX >= 0x030B0000
    ts->recursion_remaining = s->recursion_remaining;
#else
    ts->recursion_depth = s->recursion_depth;
#endif
#if PY_VERSION_HEX >= 0x030B0000
    /* Frames pushed since live in this chunk above the top, or in chunks
     * after it, which are leaked: a frame object that outlives them would
     * read freed memory. */
    ts->datastack_chunk = s->datastack_chunk;
    ts->datastack_top = s->datastack_top;
    ts->datastack_limit = s->datastack_limit;
#endif
    ts->tracing = s->tracing;
    ts->exc_info = s->exc_info;
}

static void *call_no_args(void *callable) { return PyObject_CallNoArgs(callable); }

PyObject *fast_call_guarded(PyObject *mod, PyObject *args)
{
    (void)mod;
    unsigned long long call_address, ctx;
    PyObject *callable;
    if (!PyArg_ParseTuple(args, "KKO:call_guarded", &call_address, &ctx, &callable))
        return NULL;
    ctx_call_fn call = (ctx_call_fn)(uintptr_t)call_address;
    struct saved s;
    save(&s);
    void *result = NULL;
    Py_INCREF(callable); /* a fault leaks it with the frames that used it */
    int rc = call((void *)(uintptr_t)ctx, call_no_args, callable, &result);
    if (rc == 0) {
        Py_DECREF(callable);
        if (result == NULL)
            return NULL; /* the callable's exception */
        return Py_BuildValue("(ON)", Py_True, (PyObject *)result);
    }
    /* Failed: not entered (nothing ran), or the callable faulted. */
    if (!PyGILState_Check())
        PyEval_RestoreThread(s.ts); /* it faulted with the GIL released */
    restore(&s);
    PyErr_Clear(); /* whatever the cut-short frames had raised */
    return Py_BuildValue("(Oi)", Py_False, rc);
}
