/* Node-wide mode on a shared node: nothing another user plants steers or
 * breaks a vlcs process, and garbage in the ledger neither crashes nor
 * hangs it nor lends a CPU outside the machine.
 *   test_node_safety users: two users, alice and mallory (uids of no one,
 *       taken by forked children of root; skips with the reason when not
 *       run as root).  mallory plants alice's ledger folder (mode 0777,
 *       with a ledger file 0666 inside), a symbolic link in its place, and
 *       a file of hers that alice's VLCS_NODE_LEDGER names: each refused
 *       with a sentence naming the path and the owner, nothing of alice's
 *       written through them, alice's elastic contexts lending within her
 *       process; with nothing planted alice's ledger is hers alone.
 *   test_node_safety fuzz: random bytes written into a mapped ledger while
 *       a member's elastic contexts enter and leave. */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

static const uid_t ALICE = 61701, MALLORY = 61702;
static char alice_dir[64], home[64];

static void rm_path(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        FAIL("cannot remove %s", path);
}

/* fn run in a child as uid, with no XDG_RUNTIME_DIR: its exit status. */
static int as_user(uid_t uid, int (*fn)(void))
{
    pid_t kid = fork();
    if (kid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
            _exit(90);
        unsetenv("XDG_RUNTIME_DIR");
        _exit(fn());
    }
    int st;
    CHECK_EQ(kid, waitpid(kid, &st, 0), "wait");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* ---- mallory's plants -------------------------------------------------- */

static int plant_folder(void)
{
    char file[128];
    snprintf(file, sizeof file, "%s/node-ledger", alice_dir);
    if (mkdir(alice_dir, 0777) != 0 || chmod(alice_dir, 0777) != 0)
        return 1;
    int fd = open(file, O_CREAT | O_RDWR, 0666);
    return fd >= 0 && fchmod(fd, 0666) == 0 ? 0 : 2;
}

static int plant_link(void)
{
    char target[128];
    snprintf(target, sizeof target, "%s/planted", home);
    return symlink(target, alice_dir) == 0 ? 0 : 1;
}

static int plant_file(void)
{
    int fd = open("/tmp/vlcs-safety-mallory-ledger", O_CREAT | O_RDWR | O_TRUNC, 0666);
    return fd >= 0 && fchmod(fd, 0666) == 0 ? 0 : 1;
}

/* ---- alice ----------------------------------------------------------------- */

static char expect[3][128]; /* words the refusal must contain */

static int alice_refused(void)
{
    vlcs_opts o = {.size = sizeof o, .node = 1};
    if (vlcs_init_opts(&o) == 0) {
        fprintf(stderr, "alice joined through a planted ledger: %s\n", vlcs_node_ledger());
        return 1;
    }
    for (int i = 0; i < 3; i++)
        if (expect[i][0] && strstr(vlcs_error(), expect[i]) == NULL) {
            fprintf(stderr, "the refusal \"%s\" does not say \"%s\"\n", vlcs_error(), expect[i]);
            return 2;
        }
    if (vlcs_node_ledger() != NULL)
        return 3;
    /* her process goes on: elastic contexts lend within it */
    vlcs_ctx *x = vlcs_ctx_create("x"), *y = vlcs_ctx_create("y");
    char cur[64];
    if (vlcs_ctx_set_cpus(x, "0") || vlcs_ctx_set_cpus(y, "1") || vlcs_ctx_set_elastic(x, "0-1", 0) ||
        vlcs_ctx_set_elastic(y, "0-1", 0) || vlcs_enter(y) ||
        vlcs_ctx_get_cpuset(y, VLCS_CPUSET_CURRENT, cur, sizeof cur) < 0 || strcmp(cur, "0-1") ||
        vlcs_leave())
        return 4;
    return 0;
}

static int alice_joins(void)
{
    vlcs_opts o = {.size = sizeof o, .node = 1};
    if (vlcs_init_opts(&o) != 0) {
        fprintf(stderr, "alice cannot join: %s\n", vlcs_error());
        return 1;
    }
    char want[128];
    snprintf(want, sizeof want, "%s/node-ledger", alice_dir);
    if (strcmp(vlcs_node_ledger(), want) != 0) {
        fprintf(stderr, "ledger %s, expected %s\n", vlcs_node_ledger(), want);
        return 2;
    }
    struct stat d, f;
    if (lstat(alice_dir, &d) || stat(want, &f) || !S_ISDIR(d.st_mode) || d.st_uid != ALICE ||
        (d.st_mode & 0777) != 0700 || f.st_uid != ALICE || (f.st_mode & 0777) != 0600)
        return 3;
    return 0;
}

static void expecting(const char *a, const char *b, const char *c)
{
    snprintf(expect[0], sizeof expect[0], "%s", a);
    snprintf(expect[1], sizeof expect[1], "%s", b);
    snprintf(expect[2], sizeof expect[2], "%s", c);
}

static int users_part(void)
{
    if (geteuid() != 0) {
        printf("SKIP: needs root, to act as two users (alice and mallory) of this machine\n");
        return 77;
    }
    snprintf(alice_dir, sizeof alice_dir, "/dev/shm/vlcs-%u", (unsigned)ALICE);
    snprintf(home, sizeof home, "/tmp/vlcs-safety-alice-%d", (int)getpid());
    rm_path(alice_dir);
    unlink("/tmp/vlcs-safety-mallory-ledger");
    unlink("/tmp/vlcs-safety-mallory-link");
    CHECK(mkdir(home, 0700) == 0 && chown(home, ALICE, ALICE) == 0, "alice's home");
    unsetenv("VLCS_NODE_LEDGER");
    char planted[128], mallory_uid[32];
    snprintf(planted, sizeof planted, "%s/planted", home);
    snprintf(mallory_uid, sizeof mallory_uid, "uid %u", (unsigned)MALLORY);

    /* 1. mallory's folder and ledger where alice's would be */
    CHECK_EQ(0, as_user(MALLORY, plant_folder), "mallory plants the folder");
    expecting(alice_dir, mallory_uid, "VLCS_NODE_LEDGER");
    CHECK_EQ(0, as_user(ALICE, alice_refused), "alice refuses mallory's folder");
    char file[128];
    struct stat st;
    snprintf(file, sizeof file, "%s/node-ledger", alice_dir);
    CHECK(stat(file, &st) == 0 && st.st_size == 0 && st.st_uid == MALLORY,
          "mallory's ledger file was never written by alice");
    rm_path(alice_dir);

    /* 2. a symbolic link into alice's home */
    CHECK_EQ(0, as_user(MALLORY, plant_link), "mallory plants a link");
    expecting(alice_dir, "symbolic link", "");
    CHECK_EQ(0, as_user(ALICE, alice_refused), "alice refuses the link");
    CHECK(access(planted, F_OK) != 0 && errno == ENOENT, "nothing was made in alice's home");
    rm_path(alice_dir);

    /* 3. VLCS_NODE_LEDGER naming a file of mallory's */
    CHECK_EQ(0, as_user(MALLORY, plant_file), "mallory plants a file");
    setenv("VLCS_NODE_LEDGER", "/tmp/vlcs-safety-mallory-ledger", 1);
    expecting("/tmp/vlcs-safety-mallory-ledger", mallory_uid, "");
    CHECK_EQ(0, as_user(ALICE, alice_refused), "alice refuses mallory's file");
    CHECK(stat("/tmp/vlcs-safety-mallory-ledger", &st) == 0 && st.st_size == 0,
          "mallory's file untouched");
    unlink("/tmp/vlcs-safety-mallory-ledger");
    /* ... or a link of hers */
    CHECK(symlink(planted, "/tmp/vlcs-safety-mallory-link") == 0, "link");
    CHECK(lchown("/tmp/vlcs-safety-mallory-link", MALLORY, MALLORY) == 0, "mallory's link");
    setenv("VLCS_NODE_LEDGER", "/tmp/vlcs-safety-mallory-link", 1);
    expecting("/tmp/vlcs-safety-mallory-link", "symbolic link", "");
    CHECK_EQ(0, as_user(ALICE, alice_refused), "alice refuses the link");
    CHECK(access(planted, F_OK) != 0, "nothing was made in alice's home");
    unlink("/tmp/vlcs-safety-mallory-link");
    unsetenv("VLCS_NODE_LEDGER");

    /* 4. nothing planted: alice's own folder and ledger, hers alone */
    CHECK_EQ(0, as_user(ALICE, alice_joins), "alice joins through her own ledger");
    rm_path(alice_dir);
    rm_path(home);
    PASS("node ledger: another user's plants refused");
    return 0;
}

/* ---- garbage in the ledger --------------------------------------------- */

enum { ROUNDS = 4000 };

/* A member whose contexts enter and leave while the ledger is scribbled
 * on: every CPU set it gets stays within its contexts' bound (0-1). */
static int member(int ready)
{
    vlcs_opts o = {.size = sizeof o, .node = 1};
    if (vlcs_init_opts(&o) != 0) {
        fprintf(stderr, "member: %s\n", vlcs_error());
        return 1;
    }
    vlcs_ctx *x = vlcs_ctx_create("x"), *y = vlcs_ctx_create("y");
    if (vlcs_ctx_set_cpus(x, "0") || vlcs_ctx_set_cpus(y, "1") || vlcs_ctx_set_elastic(x, "0-1", 0) ||
        vlcs_ctx_set_elastic(y, "0-1", 0))
        return 2;
    if (write(ready, "r", 1) != 1)
        return 3;
    for (int i = 0; i < ROUNDS; i++) {
        vlcs_ctx *c = i % 2 ? x : y;
        char cur[256], lent[256];
        if (vlcs_enter(c) != 0)
            return 4;
        if (vlcs_ctx_get_cpuset(c, VLCS_CPUSET_CURRENT, cur, sizeof cur) < 0 ||
            vlcs_ctx_get_cpuset(c, VLCS_CPUSET_LENT, lent, sizeof lent) < 0)
            return 5;
        if (strcmp(cur, "0") && strcmp(cur, "1") && strcmp(cur, "0-1")) {
            fprintf(stderr, "round %d: context %s runs on CPUs %s, outside its bound 0-1\n", i,
                    vlcs_ctx_name(c), cur);
            return 6;
        }
        if (vlcs_leave() != 0)
            return 7;
    }
    return 0;
}

static int fuzz_part(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    char dir[64], path[96];
    snprintf(dir, sizeof dir, "/dev/shm/vlcs-test-fuzz-%d", (int)getpid());
    CHECK(mkdir(dir, 0700) == 0, "mkdir");
    snprintf(path, sizeof path, "%s/ledger", dir);
    setenv("VLCS_NODE_LEDGER", path, 1);
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    pid_t kid = fork();
    if (kid == 0) {
        close(p[0]);
        alarm(120); /* a hang ends as a failure, not as a stuck test */
        _exit(member(p[1]));
    }
    close(p[1]);
    char r;
    CHECK_EQ(1, read(p[0], &r, 1), "the member joined");
    int fd = open(path, O_RDWR);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 4096, "the ledger");
    unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED, "map");
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int status = -1, writes = 0;
    while (waitpid(kid, &status, WNOHANG) == 0) {
        for (int k = 0; k < 64; k++) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            /* the header half the time: magic, sizes, the generation */
            size_t at = (seed >> 8) % (seed & 1 ? 64 : (uint64_t)st.st_size);
            size_t len = 1 + (seed >> 40) % 16;
            for (size_t b = 0; b < len && at + b < (size_t)st.st_size; b++)
                m[at + b] = (unsigned char)(seed >> (8 * (b % 8)));
            writes++;
        }
        sched_yield();
    }
    munmap(m, (size_t)st.st_size);
    close(fd);
    unlink(path);
    rmdir(dir);
    CHECK(WIFEXITED(status), "the member was killed by signal %d (14: a hang)",
          WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    CHECK_EQ(0, WEXITSTATUS(status), "the member's CPU sets stayed within its bound");
    printf("%d scribbles over %d rounds of enter and leave\n", writes, ROUNDS);
    PASS("node ledger: garbage neither crashes nor hangs a member nor lends outside the machine");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "users") == 0)
        return users_part();
    return fuzz_part();
}
