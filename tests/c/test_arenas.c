/* test_arenas.c - the arena list an own Python allocates through: what the
 * runtime frees is unmapped at once, what it leaves is unmapped by release,
 * and release says how much that was. */
#define _GNU_SOURCE
#define VLCS_INTERNAL_API /* vlcs_arenas_* */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static int mapped(void *p)
{
    unsigned char v;
    return mincore(p, 1, &v) == 0 ? 1 : (errno == ENOMEM ? 0 : -1);
}

int main(void)
{
    enum { N = 40, SIZE = 256 * 1024 };
    vlcs_arenas *list = vlcs_arenas_new();
    CHECK(list != NULL, "a new arena list");
    void *a[N];
    for (int i = 0; i < N; i++) {
        a[i] = vlcs_arenas_alloc(list, SIZE);
        CHECK(a[i] != NULL, "arena %d", i);
        memset(a[i], i, SIZE); /* writable, all of it */
    }
    /* the runtime gives some back: the first, one in the middle, the last */
    int freed[] = {0, 17, N - 1};
    for (size_t k = 0; k < sizeof freed / sizeof *freed; k++) {
        vlcs_arenas_free(list, a[freed[k]], SIZE);
        CHECK_EQ(0, mapped(a[freed[k]]), "a freed arena is unmapped at once");
    }
    CHECK_EQ(1, mapped(a[1]), "the others stay");
    CHECK_EQ(((unsigned char *)a[5])[SIZE - 1], 5, "and keep their bytes");
    size_t back = vlcs_arenas_release(list);
    CHECK_EQ((size_t)(N - 3) * SIZE, back, "release gives back what was left, no more");
    for (int i = 0; i < N; i++)
        CHECK_EQ(0, mapped(a[i]), "every arena is unmapped after release");
    CHECK_EQ(0, vlcs_arenas_release(NULL), "nothing to release");
    puts("test_arenas: ok");
    return 0;
}
