/* guarded_call.h - call_guarded of vlcs._isolation._fast (guarded_call.c). */
#ifndef VLCS_GUARDED_CALL_H
#define VLCS_GUARDED_CALL_H
#include <Python.h>

/* call_guarded(vlcs_ctx_call_address, ctx, callable): (True, result) or,
 * when vlcs_ctx_call failed (a fault, or the context could not be
 * entered), (False, -1) with the thread state as before the call. */
PyObject *fast_call_guarded(PyObject *mod, PyObject *args);

#endif
