/* The calling thread's place among contexts (thread_state.h); a context's
 * member threads moved to its CPUs. */
#include "common.h"
#include "thread_state.h"
#include "context.h"
#include "cpuset.h"
#include "thread.h"

_Thread_local struct tstate vlcs_thread_self;

vlcs_ctx *thread_current(void) { return effective(tstate()); }

void threads_move(vlcs_ctx *c, const vmask *mask)
{
    for (size_t i = 0; i < c->nmembers; i++) {
        struct member *m = &c->members[i];
        if (effective(m->ts) != c)
            continue;
        /* A thread that exited between the check and the call makes this fail
         * with ESRCH; nothing to move then. */
        mask_set_thread(m->tid, mask);
        atomic_store(&m->ts->moved, true);
    }
}
