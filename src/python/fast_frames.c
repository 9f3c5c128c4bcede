/*
 * fast_frames.c - the thread state and the frames: the current one, its instruction, its
 * globals, the one below (per CPython version).
 *
 * A part of vlcs._isolation._fast, compiled as one translation unit by
 * fast.c, which holds the includes and says why: see there.
 */
/* The thread state, with the GIL held.  3.10 and 3.11 keep it in the
 * runtime, read here without a call.  3.12+ keep it in a thread-local of
 * libpython (_Py_tss_tstate, not exported), which PyThreadState_Get reads
 * through __tls_get_addr: about 20 instructions, a sixth of a read.  Where
 * libpython's thread-locals are in the static TLS block (it was loaded
 * with the program, as the python executable links it), the variable is
 * at one offset from the thread pointer in every thread: found once
 * (tstate_offset_find), it is one load. */
#if PY_VERSION_HEX >= 0x030C0000
static ptrdiff_t tstate_offset; /* from the thread pointer, or 0: unknown */
#endif

static inline PyThreadState *thread_state(void)
{
#if PY_VERSION_HEX < 0x030C0000
    return _PyThreadState_GET();
#else
    if (tstate_offset != 0)
        return *(PyThreadState **)((char *)__builtin_thread_pointer() + tstate_offset);
    return PyThreadState_Get();
#endif
}

/* --- frames: the current one, its instruction, its globals, the one below --- */
/* Inlined always: each is a load or two, and the reads' short path takes
 * them all (a call saves and restores more than they cost). */
#define FRAME_FN static inline __attribute__((always_inline))

#if PY_VERSION_HEX >= 0x030B0000
typedef _PyInterpreterFrame frame_t;

FRAME_FN frame_t *frame_top(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->current_frame;
#else
    return ts->cframe->current_frame;
#endif
}

FRAME_FN bool frame_complete(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (f->owner == FRAME_OWNED_BY_CSTACK)
        return false;
#endif
    return !_PyFrame_IsIncomplete(f);
}

FRAME_FN frame_t *frame_below(frame_t *f) { return f->previous; }

/* The entry frame of a call from C into Python (3.12+), on the C stack. */
FRAME_FN bool frame_of_c_call(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030C0000
    return f->owner == FRAME_OWNED_BY_CSTACK;
#else
    (void)f;
    return false;
#endif
}
FRAME_FN PyObject *frame_globals(frame_t *f) { return f->f_globals; }

FRAME_FN int frame_opcode(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030D0000
    return f->instr_ptr->op.code;
#else
    return _Py_OPCODE(*f->prev_instr);
#endif
}
#else /* 3.10: frame objects */
typedef PyFrameObject frame_t;

FRAME_FN frame_t *frame_top(PyThreadState *ts) { return ts->frame; }
FRAME_FN bool frame_complete(frame_t *f) { return f->f_lasti >= 0; }
FRAME_FN frame_t *frame_below(frame_t *f) { return f->f_back; }
FRAME_FN bool frame_of_c_call(frame_t *f)
{
    (void)f;
    return false;
}
FRAME_FN PyObject *frame_globals(frame_t *f) { return f->f_globals; }

FRAME_FN int frame_opcode(frame_t *f)
{
    const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(f->f_code->co_code);
    return code[(size_t)f->f_lasti * sizeof(_Py_CODEUNIT)];
}
#endif

/* The innermost complete frame, or NULL (no Python code is running). */
static frame_t *frame_current(PyThreadState *ts)
{
    frame_t *f = frame_top(ts);
    while (f != NULL && !frame_complete(f))
        f = frame_below(f);
    return f;
}
