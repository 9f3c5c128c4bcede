/* The lending plan of elastic contexts (src/elastic_policy.c) as a pure
 * function: who is busy in, CPU sets out, no threads needed. */
#define _GNU_SOURCE
#include "check.h"
#include "elastic_policy.h"

#include <stdarg.h>
#include <string.h>

/* A mask from CPU ids, ended by -1. */
static vmask cpus(int first, ...)
{
    vmask m;
    memset(&m, 0, sizeof m);
    va_list ap;
    va_start(ap, first);
    for (int c = first; c >= 0; c = va_arg(ap, int))
        m.w[c / 64] |= UINT64_C(1) << (c % 64);
    va_end(ap);
    return m;
}

static const char *show(const vmask *m)
{
    static char buf[8][256];
    static int k;
    char *b = buf[k++ % 8];
    size_t n = 0;
    b[0] = '\0';
    for (int c = 0; c < VLCS_MAX_CPUS; c++)
        if ((m->w[c / 64] >> (c % 64)) & 1)
            n += (size_t)snprintf(b + n, 256 - n, "%s%d", n ? "," : "", c);
    return b;
}

#define EXPECT(got, want)                                                                \
    do {                                                                                 \
        vmask g_ = (got), w_ = (want);                                                   \
        CHECK(memcmp(&g_, &w_, sizeof g_) == 0, "got %s, want %s", show(&g_), show(&w_)); \
    } while (0)

int main(void)
{
    vmask out[4];
    vmask both = cpus(0, 1, -1);

    /* Two contexts of one CPU each, bound to both. */
    struct elastic_in two[2] = {{cpus(0, -1), both, false, 0, 0}, {cpus(1, -1), both, true, 0, 0}};
    elastic_plan(two, 2, out);
    EXPECT(out[0], cpus(0, -1)); /* idle: its home, ready for a thread to enter */
    EXPECT(out[1], both);        /* busy: its home and a's CPU */
    two[0].busy = true;
    elastic_plan(two, 2, out);
    EXPECT(out[0], cpus(0, -1)); /* a thread entered a: its CPU is back */
    EXPECT(out[1], cpus(1, -1));
    two[0].busy = two[1].busy = false;
    elastic_plan(two, 2, out);
    EXPECT(out[0], cpus(0, -1));
    EXPECT(out[1], cpus(1, -1));

    /* A bound that does not reach the idle home: nothing is borrowed. */
    struct elastic_in fenced[2] = {{cpus(0, -1), cpus(0, -1), false, 0, 0},
                                   {cpus(1, -1), cpus(1, -1), true, 0, 0}};
    elastic_plan(fenced, 2, out);
    EXPECT(out[1], cpus(1, -1));

    /* Two borrowers share an idle home in proportion to their homes' sizes,
     * each in a run of the lowest CPUs. */
    vmask all = cpus(0, 1, 2, 3, 4, 5, 6, 7, 8, -1);
    struct elastic_in three[3] = {{cpus(0, 1, 2, -1), all, false, 0, 0},
                                  {cpus(3, 4, -1), all, true, 0, 0},
                                  {cpus(5, 6, 7, 8, -1), all, true, 0, 0}};
    elastic_plan(three, 3, out);
    EXPECT(out[0], cpus(0, 1, 2, -1));
    EXPECT(out[1], cpus(0, 3, 4, -1));       /* 3 lent CPUs * 2/6 = 1 */
    EXPECT(out[2], cpus(1, 2, 5, 6, 7, 8, -1)); /* 3 * 4/6 = 2 */
    /* A priority overrides the home size. */
    three[1].weight = 4;
    three[2].weight = 2;
    elastic_plan(three, 3, out);
    EXPECT(out[1], cpus(0, 1, 3, 4, -1));
    EXPECT(out[2], cpus(2, 5, 6, 7, 8, -1));

    /* Overlapping homes: a CPU in a busy context's home is never lent. */
    struct elastic_in overlap[2] = {{cpus(0, 1, -1), all, true, 0, 0}, {cpus(1, 2, -1), all, false, 0, 0}};
    elastic_plan(overlap, 2, out);
    EXPECT(out[0], cpus(0, 1, 2, -1));
    EXPECT(out[1], cpus(1, 2, -1));

    /* What one bound cannot take goes to a borrower whose bound can. */
    struct elastic_in narrow[3] = {{cpus(0, 1, -1), all, false, 0, 0},
                                   {cpus(2, -1), cpus(0, 2, -1), true, 8, 0},
                                   {cpus(3, -1), cpus(0, 1, 3, -1), true, 1, 0}};
    elastic_plan(narrow, 3, out);
    EXPECT(out[1], cpus(0, 2, -1)); /* its quota was both, its bound allows CPU 0 */
    EXPECT(out[2], cpus(1, 3, -1)); /* CPU 1 left over: taken by the one that can */
    /* A borrower held to `most` CPUs (its lends did not pay) takes no more;
     * what it leaves goes to the other borrower, or stays with the owner. */
    struct elastic_in held[3] = {{cpus(0, 1, 2, 3, -1), all, false, 0, 0},
                                 {cpus(4, 5, -1), all, true, 0, 3},
                                 {cpus(6, -1), all, true, 0, 0}};
    elastic_plan(held, 3, out);
    EXPECT(out[1], cpus(0, 4, 5, -1));       /* quota 3 of the 4 lent, cut to 1 by its most */
    EXPECT(out[2], cpus(1, 2, 3, 6, -1));    /* the rest */
    held[2].busy = false;
    elastic_plan(held, 3, out);
    EXPECT(out[1], cpus(0, 4, 5, -1));       /* alone it still stops at 3 */
    EXPECT(out[0], cpus(0, 1, 2, 3, -1));
    held[1].most = 2;                        /* its home's size: it borrows nothing */
    elastic_plan(held, 3, out);
    EXPECT(out[1], cpus(4, 5, -1));
    PASS("elastic policy");
    return 0;
}
