/* arpack-ng keeps the state of a solve in Fortran SAVE variables, so one
 * copy cannot run two solves at once.  With a copy per context it can. */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arpack_solve.h"

/* Alternate the steps of two solves in this thread until both end. */
static void interleave(struct solve *s1, struct solve *s2)
{
    int more1 = 1, more2 = 1;
    while (more1 || more2) {
        if (more1)
            more1 = solve_step(s1);
        if (more2)
            more2 = solve_step(s2);
    }
}

static void *run(void *p)
{
    solve_run(p);
    return NULL;
}

int main(void)
{
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    vlcs_ctx_set_cpus(a, "0");
    vlcs_ctx_setenv(a, "OPENBLAS_NUM_THREADS", "1");
    vlcs_ctx_setenv(b, "OPENBLAS_NUM_THREADS", "1");
    void *la = must_load(a, "libarpack.so.2"), *lb = must_load(b, "libarpack.so.2");
    must_sym(la, "dsaupd_");

    /* Sequential reference, one solve after the other in one copy. */
    struct solve s1, s2;
    solve_init(&s1, la, 600, 1.0);
    solve_init(&s2, la, 600, 3.0);
    solve_run(&s1);
    solve_run(&s2);
    CHECK(solve_correct(&s1) && solve_correct(&s2), "sequential solves are exact (info %d %d)",
          s1.info, s2.info);
    double ref1[NEV], ref2[NEV];
    memcpy(ref1, s1.eig, sizeof ref1);
    memcpy(ref2, s2.eig, sizeof ref2);
    solve_free(&s1);
    solve_free(&s2);

    /* One copy, two solves interleaved step by step (what two threads do
     * to it, made deterministic): the shared state breaks them.  In a child
     * process, because the mix may as well corrupt memory. */
    pid_t pid = fork();
    if (pid == 0) {
        solve_init(&s1, la, 600, 1.0);
        solve_init(&s2, la, 600, 3.0);
        interleave(&s1, &s2);
        printf("one copy, interleaved: info %d and %d, correct %d and %d\n", s1.info, s2.info,
               solve_correct(&s1), solve_correct(&s2));
        fflush(stdout);
        _exit(solve_correct(&s1) && solve_correct(&s2) ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "interleaved solves in one copy should not both succeed");

    /* Two copies, same interleaving: both exact. */
    solve_init(&s1, la, 600, 1.0);
    solve_init(&s2, lb, 600, 3.0);
    interleave(&s1, &s2);
    CHECK(solve_correct(&s1) && solve_correct(&s2), "interleaved in two contexts (info %d %d)",
          s1.info, s2.info);
    solve_free(&s1);
    solve_free(&s2);

    /* Two copies, two real threads concurrently: the sequential results. */
    for (int round = 0; round < 5; round++) {
        solve_init(&s1, la, 600, 1.0);
        solve_init(&s2, lb, 600, 3.0);
        pthread_t t1, t2;
        pthread_create(&t1, NULL, run, &s1);
        pthread_create(&t2, NULL, run, &s2);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        CHECK(solve_correct(&s1) && solve_correct(&s2), "concurrent solves, round %d", round);
        for (int k = 0; k < NEV; k++) {
            CHECK(fabs(ref1[k] - s1.eig[k]) < 1e-9, "same eigenvalue %d as sequential (to solver tolerance)", k);
            CHECK(fabs(ref2[k] - s2.eig[k]) < 1e-9, "same eigenvalue %d as sequential (to solver tolerance)", k);
        }
        solve_free(&s1);
        solve_free(&s2);
    }
    PASS("arpack");
    return 0;
}
