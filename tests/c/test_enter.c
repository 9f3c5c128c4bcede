/* Entering and leaving: nesting, current context, and every misuse gives an
 * error instead of a crash; other contexts keep working. */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static int cpus_now(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    syscall(SYS_sched_getaffinity, 0, sizeof s, &s);
    return (CPU_ISSET(0, &s) ? 1 : 0) | (CPU_ISSET(1, &s) ? 2 : 0);
}

static pthread_barrier_t inside, release;
static void *sit_inside(void *p)
{
    vlcs_enter(p);
    pthread_barrier_wait(&inside);
    pthread_barrier_wait(&release);
    vlcs_leave();
    return NULL;
}

static void *enter_and_exit(void *c)
{
    vlcs_enter(c);
    return NULL;
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create(NULL);
    CHECK(strncmp(vlcs_ctx_name(b), "ctx", 3) == 0, "default name");
    CHECK_EQ(0, vlcs_ctx_set_cpus(a, "0"), "a on 0");
    CHECK_EQ(0, vlcs_ctx_set_cpus(b, "1"), "b on 1");
    char list[32];
    CHECK_EQ(1, vlcs_ctx_get_cpus(b, list, sizeof list), "get_cpus");
    CHECK_STR("1", list, "get_cpus");

    CHECK(vlcs_current() == NULL, "outside");
    CHECK_ERR(vlcs_leave(), "has not entered");
    CHECK_CODE(VLCS_E_INVALID, "leave without enter");
    CHECK_EQ(0, vlcs_enter(a), "enter a");
    CHECK(vlcs_current() == a, "in a");
    CHECK_EQ(1, cpus_now(), "on a's CPU");
    CHECK_EQ(0, vlcs_enter(b), "nest b");
    CHECK(vlcs_current() == b, "in b");
    CHECK_EQ(2, cpus_now(), "on b's CPU");
    CHECK_EQ(0, vlcs_enter(b), "re-enter b");
    CHECK_EQ(0, vlcs_leave(), "leave b");
    CHECK(vlcs_current() == b, "still in b");
    CHECK_EQ(0, vlcs_leave(), "leave b");
    CHECK(vlcs_current() == a, "back in a");
    CHECK_EQ(1, cpus_now(), "back on a's CPU");
    CHECK_EQ(0, vlcs_leave(), "leave a");
    CHECK(vlcs_current() == NULL, "outside");
    CHECK_EQ(3, cpus_now(), "both CPUs again");

    /* Nesting has a limit, and hitting it leaves the thread where it was. */
    int depth = 0;
    while (depth < 1000 && vlcs_enter(depth % 2 ? a : b) == 0)
        depth++;
    CHECK_EQ(64, depth, "enters nest 64 deep");
    CHECK_CODE(VLCS_E_LIMIT, "nesting too deep");
    CHECK_EQ(VLCS_LIMIT_NESTING, vlcs_errlimit(), "the limit hit is the nesting depth");
    CHECK(strstr(vlcs_error(), "nested 64 deep") != NULL, "says the limit: %s", vlcs_error());
    CHECK(vlcs_current() == a, "still in the innermost context");
    while (depth-- > 0)
        CHECK_EQ(0, vlcs_leave(), "unwind");
    CHECK(vlcs_current() == NULL, "outside again");
    CHECK_EQ(3, cpus_now(), "both CPUs again");

    /* Destroy while another thread is inside. */
    pthread_barrier_init(&inside, NULL, 2);
    pthread_barrier_init(&release, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, sit_inside, a);
    pthread_barrier_wait(&inside);
    CHECK_ERR(vlcs_ctx_destroy(a), "1 thread(s) are inside it");
    CHECK_CODE(VLCS_E_BUSY, "destroy while a thread is inside");
    pthread_barrier_wait(&release);
    pthread_join(t, NULL);
    CHECK_EQ(0, vlcs_ctx_destroy(a), "destroy once the thread left");

    /* Use after destroy. */
    CHECK_ERR(vlcs_enter(a), "context 'a' was destroyed");
    CHECK_CODE(VLCS_E_DESTROYED, "enter after destroy");
    CHECK_ERRC(VLCS_E_DESTROYED, vlcs_ctx_set_cpus(a, "0"));
    CHECK_NULLC(VLCS_E_DESTROYED, vlcs_ctx_load(a, PROBE_LIB));
    CHECK_ERRC(VLCS_E_DESTROYED, vlcs_ctx_setenv(a, "X", "1"));
    CHECK_ERRC(VLCS_E_DESTROYED, vlcs_ctx_destroy(a));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_enter(NULL));

    /* A thread that exits while inside leaves the context. */
    pthread_create(&t, NULL, enter_and_exit, b);
    pthread_join(t, NULL);
    CHECK_EQ(0, vlcs_ctx_destroy(b), "thread exited inside b: b can be destroyed");
    PASS("enter");
    return 0;
}
