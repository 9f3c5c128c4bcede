/* The calling thread's place among contexts (thread_state.h). */
#include "thread_state.h"

_Thread_local struct tstate vlcs_thread_self;

vlcs_ctx *thread_current(void) { return effective(tstate()); }
