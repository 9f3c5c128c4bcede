/*
 * node.c - node-wide lending: the elastic contexts of every cooperating
 * process on the machine plan together, through one ledger in shared memory
 * (nOS-V's shared scheduler is the model).
 *
 * The ledger is a file mapped by every member, where only its user can
 * reach it: $XDG_RUNTIME_DIR/vlcs/node-ledger, else
 * /dev/shm/vlcs-<uid>/node-ledger, in a directory vlcs makes with mode 0700
 * and checks (or the file VLCS_NODE_LEDGER names).  Nothing another user
 * plants is used: the file and its directory are opened without following
 * symbolic links and must be this user's, with no access for group or
 * others.  It holds one slot per elastic context of the node: owner pid,
 * home, bound, busy, weight, and the CPUs the last plan gave it.  The design
 * keeps the shared state small and self-healing:
 *
 *   - the kernel's lock on the file's first byte (an open-file-description
 *     lock) guards the slots: no word of the file can leave it taken, and a
 *     member that dies holding it loses it with its descriptors;
 *   - every value is checked under that lock before it is used (every
 *     process of the user can write the file, and one that dies mid-write
 *     leaves it half-written): a damaged header starts the ledger afresh, a
 *     slot with an impossible owner is dropped, CPUs past the machine's are
 *     cleared, and a context's share is cut to its home and bound;
 *   - a process writes only its own slots, then plans for everyone with the
 *     same pure function as inside one process (elastic_policy.c) and stores
 *     each slot's share, so every member reads one consistent plan;
 *   - a generation counter, the futex word, is bumped after every plan; each
 *     member has one watcher thread waiting on it, which applies its own
 *     slots' shares (moves threads, resizes pools) when another process
 *     planned;
 *   - the watcher's wait times out every REAP_MS; it then checks the owners
 *     of the other slots (each member holds a record lock the kernel drops
 *     when it exits, dies or execs), and one that is gone loses its slots:
 *     a process killed with SIGKILL gives its CPUs back within REAP_MS.
 *
 * A process that exits normally leaves at once (atexit).  A pid reused by a
 * new member takes over nothing: the dead one's slots have keys it does not
 * know, and its first plan frees them.  A forked child
 * does not inherit membership: its elastic contexts lend within itself.
 * Members must share a pid namespace (one container), since slots are
 * owned by pids.
 */
#include "common.h"
#include "node.h"
#include "context.h"
#include "cpuset.h"
#include "elastic_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LEDGER_MAGIC UINT64_C(0x65646f6e73636c76) /* "vlcsnode" */
#define LEDGER_VERSION 2
#define LEDGER_SLOTS 256
#define REAP_MS 100
#define PID_LIMIT 4194304 /* the kernel's PID_MAX_LIMIT on 64-bit */
#define WEIGHT_LIMIT 1000000

struct slot {
    int32_t pid; /* 0: free */
    uint32_t weight;
    uint64_t key;   /* the owner's name for the context */
    uint32_t busy;
    int32_t most; /* the most CPUs lends may bring it to; 0: its bound's */
    vmask home, bound;
    vmask current; /* the last plan's share */
};

struct ledger {
    uint64_t magic;
    uint32_t version;
    uint32_t size; /* sizeof(struct ledger): a build with another VLCS_MAX_CPUS differs */
    _Atomic uint32_t generation; /* futex word: bumped after every plan */
    uint32_t pad;
    /* Homes of members that exited or died: free CPUs, lent to any busy
     * context whose bound has them until a member's home claims them. */
    vmask freed;
    struct slot slot[LEDGER_SLOTS];
};

static struct ledger *L;   /* set once, at join; read without lock after */
static _Atomic bool active; /* false again in a forked child */
static pid_t self;
static char ledger_path[PATH_MAX];
/* The generation this process's own last plan produced (elastic_lock):
 * the watcher skips it, its shares were applied already. */
static uint32_t own_generation;
/* Scratch for a plan over the node, under the ledger lock. */
static struct elastic_in node_in[LEDGER_SLOTS + 1];
static vmask node_out[LEDGER_SLOTS + 1];

bool node_active(void) { return atomic_load_explicit(&active, memory_order_acquire); }

bool node_planned_here(uint32_t generation) { return generation == own_generation; }

VLCS_API const char *vlcs_node_ledger(void) { return node_active() ? ledger_path : NULL; }

/* ---- members' liveness ---------------------------------------------------- */

/* Each member holds a POSIX record lock on one byte of the ledger file, at
 * LIVE_BASE + its pid, through a descriptor opened close-on-exec.  The
 * kernel drops such a lock when the process exits, is killed, or execs
 * another program (the descriptor closes), and a forked child never holds
 * its parent's; so "is the lock still held" answers "is that member still
 * there" without /proc, zombies and exec'd programs included.  The bytes
 * lie past the end of the file, where locks are allowed. */
#define LIVE_BASE ((off_t)1 << 32)

static int live_fd = -1;

static int hold_live_lock(void)
{
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LIVE_BASE + self, .l_len = 1};
    return fcntl(live_fd, F_SETLK, &l);
}

static bool member_gone(const struct slot *s)
{
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = LIVE_BASE + s->pid, .l_len = 1};
    if (fcntl(live_fd, F_GETLK, &l) != 0)
        return false; /* cannot tell: keep it */
    return l.l_type == F_UNLCK;
}

/* ---- the ledger ------------------------------------------------------------ */

/* Frees the slots of processes that are gone; with the ledger lock held.
 * Returns how many. */
static int reap_locked(void)
{
    int freed = 0;
    for (int i = 0; i < LEDGER_SLOTS; i++) {
        struct slot *s = &L->slot[i];
        if (s->pid != 0 && s->pid != self && member_gone(s)) {
            s->pid = 0;
            for (int w = 0; w < MASK_WORDS; w++)
                L->freed.w[w] |= s->home.w[w];
            freed++;
        }
    }
    return freed;
}

/* Set under the ledger lock when a plan was stored: the unlocking thread
 * wakes the other members. */
static bool wake_pending;

/* The CPUs this machine has: what any member's CPUs can be. */
static vmask machine;

static void clamp(vmask *m)
{
    for (int w = 0; w < MASK_WORDS; w++)
        m->w[w] &= machine.w[w];
}

static void ledger_fresh_header(struct ledger *l)
{
    l->version = LEDGER_VERSION;
    l->size = sizeof *l;
    __atomic_store_n(&l->magic, LEDGER_MAGIC, __ATOMIC_RELEASE);
}

/* Makes what the ledger holds usable; with the ledger lock held.  A damaged
 * header starts it afresh: every member writes its slots again at its next
 * plan, and meanwhile its CPUs are in no one's home, so no one borrows them. */
static void check_locked(void)
{
    if (L->magic != LEDGER_MAGIC || L->version != LEDGER_VERSION || L->size != sizeof *L) {
        memset(L->slot, 0, sizeof L->slot);
        memset(&L->freed, 0, sizeof L->freed);
        ledger_fresh_header(L);
        atomic_fetch_add_explicit(&L->generation, 1, memory_order_release);
        wake_pending = true;
    }
    for (int i = 0; i < LEDGER_SLOTS; i++) {
        struct slot *s = &L->slot[i];
        if (s->pid < 0 || s->pid > PID_LIMIT)
            memset(s, 0, sizeof *s);
        if (s->pid == 0)
            continue;
        clamp(&s->home);
        clamp(&s->bound);
        clamp(&s->current);
        if (s->weight > WEIGHT_LIMIT)
            s->weight = WEIGHT_LIMIT;
        if (s->most < 0 || s->most > VLCS_MAX_CPUS)
            s->most = 0;
    }
    clamp(&L->freed);
}

/* The threads of this process take local_lock first: an open-file-
 * description lock belongs to the open file, which they share. */
static pthread_mutex_t local_lock = PTHREAD_MUTEX_INITIALIZER;

static void ledger_lock(void)
{
    pthread_mutex_lock(&local_lock);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    /* Another error (no lock records left) leaves only this process's
     * threads excluded: a plan from two processes at once is one of two
     * consistent plans, and the next one settles it. */
    while (fcntl(live_fd, F_OFD_SETLKW, &l) != 0 && errno == EINTR)
        ;
    check_locked();
}

static void ledger_unlock(void)
{
    bool wake = wake_pending;
    wake_pending = false;
    struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    fcntl(live_fd, F_OFD_SETLK, &l);
    pthread_mutex_unlock(&local_lock);
    if (wake)
        syscall(SYS_futex, &L->generation, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Plans over every slot and stores the shares; with the ledger lock held.
 * Returns the new generation, to be woken after unlocking. */
static uint32_t replan_locked(void)
{
    size_t n = 0;
    int index[LEDGER_SLOTS];
    vmask homes = {{0}};
    for (int i = 0; i < LEDGER_SLOTS; i++) {
        const struct slot *s = &L->slot[i];
        if (s->pid == 0)
            continue;
        node_in[n].home = s->home;
        node_in[n].bound = s->bound;
        node_in[n].busy = s->busy != 0;
        node_in[n].weight = s->weight;
        node_in[n].most = s->most;
        index[n++] = i;
        for (int w = 0; w < MASK_WORDS; w++)
            homes.w[w] |= s->home.w[w];
    }
    /* Freed CPUs lend as the home of one idle context no one can enter; a
     * member whose home has them takes them back; an empty node forgets. */
    bool any_freed = false;
    for (int w = 0; w < MASK_WORDS; w++) {
        L->freed.w[w] = n == 0 ? 0 : L->freed.w[w] & ~homes.w[w];
        any_freed |= L->freed.w[w] != 0;
    }
    if (any_freed) {
        node_in[n].home = node_in[n].bound = L->freed;
        node_in[n].busy = false;
        node_in[n].weight = 0;
        node_in[n].most = 0;
    }
    elastic_plan(node_in, n + any_freed, node_out);
    for (size_t k = 0; k < n; k++)
        L->slot[index[k]].current = node_out[k];
    wake_pending = true;
    return atomic_fetch_add_explicit(&L->generation, 1, memory_order_release) + 1;
}

/* A context's share as the ledger's plan gives it, cut to what this
 * process knows of the context: its home, and borrowed CPUs of its bound
 * only (whatever the file says).  Its home alone without a slot. */
static void share(const struct slot *s, const struct elastic_in *in, vmask *out)
{
    for (int w = 0; w < MASK_WORDS; w++)
        out->w[w] = in->home.w[w] | (s != NULL ? s->current.w[w] & in->bound.w[w] : 0);
}

static struct slot *own_slot(uint64_t key)
{
    for (int i = 0; i < LEDGER_SLOTS; i++)
        if (L->slot[i].pid == self && L->slot[i].key == key)
            return &L->slot[i];
    return NULL;
}

void node_plan(const uint64_t *keys, const struct elastic_in *in, size_t n, vmask *out)
{
    ledger_lock();
    /* Slots of contexts that are no longer elastic here go first, so that a
     * full ledger has room for the ones that are. */
    for (int i = 0; i < LEDGER_SLOTS; i++) {
        struct slot *s = &L->slot[i];
        if (s->pid != self)
            continue;
        bool kept = false;
        for (size_t k = 0; k < n && !kept; k++)
            kept = keys[k] == s->key;
        if (!kept)
            s->pid = 0;
    }
    for (size_t k = 0; k < n; k++) {
        struct slot *s = own_slot(keys[k]);
        for (int i = 0; s == NULL && i < LEDGER_SLOTS; i++)
            if (L->slot[i].pid == 0) {
                s = &L->slot[i];
                s->key = keys[k];
                s->pid = self;
            }
        if (s == NULL) /* the node's ledger is full: this one stays home */
            continue;
        s->home = in[k].home;
        s->bound = in[k].bound;
        s->busy = in[k].busy;
        s->weight = in[k].weight;
        s->most = in[k].most;
    }
    own_generation = replan_locked();
    for (size_t k = 0; k < n; k++)
        share(own_slot(keys[k]), &in[k], &out[k]);
    ledger_unlock();
}

void node_read(const uint64_t *keys, const struct elastic_in *in, size_t n, vmask *out)
{
    ledger_lock();
    for (size_t k = 0; k < n; k++)
        share(own_slot(keys[k]), &in[k], &out[k]);
    ledger_unlock();
}

void node_lent(uint64_t key, const vmask *home, vmask *out)
{
    ledger_lock();
    for (int i = 0; i < LEDGER_SLOTS; i++) {
        const struct slot *s = &L->slot[i];
        if (s->pid == 0 || (s->pid == self && s->key == key))
            continue;
        for (int w = 0; w < MASK_WORDS; w++)
            out->w[w] |= home->w[w] & s->current.w[w];
    }
    ledger_unlock();
}

/* ---- the watcher --------------------------------------------------------- */

/* Who applies another process's plan: elastic.c's, handed to node_enable
 * by the file above both, so that this file calls nothing above it. */
static void (*on_plan)(uint32_t generation);


static void *watch(void *arg)
{
    (void)arg;
    uint32_t seen = atomic_load_explicit(&L->generation, memory_order_acquire);
    while (node_active()) {
        struct timespec ts = {0, REAP_MS * 1000000L};
        long rc = syscall(SYS_futex, &L->generation, FUTEX_WAIT, seen, &ts, NULL, 0);
        if (!node_active())
            break;
        uint32_t now = atomic_load_explicit(&L->generation, memory_order_acquire);
        if (now != seen) {
            seen = now;
            on_plan(now);
        } else if (rc != 0 && errno == ETIMEDOUT) {
            /* A file cut short is grown back (its pages past the end would
             * fault; only the user's own processes can cut it, and until
             * then one touching those pages dies: the mode trusts them). */
            struct stat st;
            if (fstat(live_fd, &st) == 0 && st.st_size < (off_t)sizeof *L)
                (void)ftruncate(live_fd, sizeof *L);
            /* A plan without the departed; this process applies it too, at
             * the next turn (it is not marked as its own). */
            ledger_lock();
            if (reap_locked() > 0)
                replan_locked();
            ledger_unlock();
        }
    }
    return NULL;
}

/* ---- joining and leaving ------------------------------------------------ */

static void leave(void)
{
    if (!node_active() || getpid() != self)
        return;
    ledger_lock();
    for (int i = 0; i < LEDGER_SLOTS; i++)
        if (L->slot[i].pid == self) {
            L->slot[i].pid = 0;
            for (int w = 0; w < MASK_WORDS; w++)
                L->freed.w[w] |= L->slot[i].home.w[w];
        }
    replan_locked();
    ledger_unlock();
}

void node_after_fork(void) { atomic_store(&active, false); }

/* Whether the object fd refers to is this user's alone; else why not, in
 * err, naming `path` and what to do. */
static bool ours_alone(int fd, const char *path, bool dir, char *err, size_t errsize)
{
    struct stat st;
    const char *what = dir ? "directory" : "file";
    if (fstat(fd, &st) != 0) {
        snprintf(err, errsize, "cannot inspect %s: %s", path, strerror(errno));
        return false;
    }
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
        snprintf(err, errsize, "%s is not a regular %s; remove it, or set VLCS_NODE_LEDGER to a "
                 "file of your own", path, what);
        return false;
    }
    if (st.st_uid != getuid()) {
        snprintf(err, errsize,
                 "the %s %s belongs to uid %u, not to this user (uid %u): another user may have "
                 "planted it, and vlcs will not share its ledger through it; have it removed (its "
                 "owner or an administrator), or set VLCS_NODE_LEDGER to a file of your own",
                 what, path, (unsigned)st.st_uid, (unsigned)getuid());
        return false;
    }
    if ((st.st_mode & 077) != 0) {
        snprintf(err, errsize,
                 "the %s %s is open to other users (mode %04o): they could read and change the "
                 "node's plan; run `chmod go= %s`, or set VLCS_NODE_LEDGER to a file of your own",
                 what, path, (unsigned)(st.st_mode & 07777), path);
        return false;
    }
    return true;
}

/* The open failed because the last component is a symbolic link. */
static void link_refused(const char *path, char *err, size_t errsize)
{
    snprintf(err, errsize,
             "%s is a symbolic link, which vlcs does not follow for its ledger (another user may "
             "have planted it); remove it, or set VLCS_NODE_LEDGER to a file of your own",
             path);
}

/* The folder the ledger lives in, made with mode 0700 if missing, as an
 * open descriptor, or -1 with *code and err set.  Checked before it is
 * opened (a folder of another user's may not even be readable) and again,
 * through the descriptor, after. */
static int private_dir(const char *dir, int *code, char *err, size_t errsize)
{
    *code = VLCS_E_INVALID;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errsize,
                 "cannot make the folder %s for the node ledger: %s; node-wide mode needs a "
                 "shared-memory folder: mount a tmpfs at /dev/shm or set VLCS_NODE_LEDGER to a "
                 "file on one",
                 dir, strerror(errno));
        *code = VLCS_E_SYSTEM;
        return -1;
    }
    struct stat st;
    bool there = lstat(dir, &st) == 0;
    if (there && S_ISLNK(st.st_mode)) {
        link_refused(dir, err, errsize);
        return -1;
    }
    if (there && S_ISDIR(st.st_mode) && st.st_uid != getuid()) {
        snprintf(err, errsize,
                 "the directory %s belongs to uid %u, not to this user (uid %u): another user may "
                 "have planted it, and vlcs will not keep its ledger there; have it removed (its "
                 "owner or an administrator), or set VLCS_NODE_LEDGER to a file of your own",
                 dir, (unsigned)st.st_uid, (unsigned)getuid());
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP)
            link_refused(dir, err, errsize);
        else if (errno == ENOTDIR)
            snprintf(err, errsize, "%s is not a directory; remove it, or set VLCS_NODE_LEDGER "
                     "to a file of your own", dir);
        else {
            snprintf(err, errsize, "cannot open the folder %s of the node ledger: %s", dir,
                     strerror(errno));
            *code = VLCS_E_SYSTEM;
        }
        return -1;
    }
    if (!ours_alone(fd, dir, true, err, errsize)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Opens (and, first, creates) the ledger.  VLCS_OK or a code, with err. */
static int ledger_open(char *err, size_t errsize)
{
    const char *env = getenv("VLCS_NODE_LEDGER");
    int dirfd = AT_FDCWD;
    const char *name = ledger_path;
    if (env != NULL && *env != '\0') {
        snprintf(ledger_path, sizeof ledger_path, "%s", env);
    } else {
        /* The user's runtime folder (systemd's, mode 0700) where there is
         * one, else a folder of the user's own on tmpfs. */
        char dir[PATH_MAX - 16];
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (xdg != NULL && xdg[0] == '/' && strlen(xdg) < sizeof dir - 8)
            snprintf(dir, sizeof dir, "%s/vlcs", xdg);
        else
            snprintf(dir, sizeof dir, "/dev/shm/vlcs-%u", (unsigned)getuid());
        int code;
        dirfd = private_dir(dir, &code, err, errsize);
        if (dirfd < 0)
            return code;
        snprintf(ledger_path, sizeof ledger_path, "%s/node-ledger", dir);
        name = "node-ledger";
    }
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    int open_errno = errno;
    if (dirfd != AT_FDCWD)
        close(dirfd);
    if (fd < 0) {
        /* The kernel may refuse a link of another user's before it gets to
         * O_NOFOLLOW (fs.protected_symlinks: EACCES): what is there says. */
        struct stat st;
        bool planted = lstat(ledger_path, &st) == 0;
        if (planted && S_ISLNK(st.st_mode)) {
            link_refused(ledger_path, err, errsize);
            return VLCS_E_INVALID;
        }
        if (planted && st.st_uid != getuid()) {
            snprintf(err, errsize,
                     "the file %s belongs to uid %u, not to this user (uid %u), and cannot be "
                     "opened (%s); set VLCS_NODE_LEDGER to a file of your own",
                     ledger_path, (unsigned)st.st_uid, (unsigned)getuid(), strerror(open_errno));
            return VLCS_E_INVALID;
        }
        snprintf(err, errsize,
                 "cannot open the node ledger %s: %s; node-wide mode needs shared memory: "
                 "mount a tmpfs at /dev/shm or set VLCS_NODE_LEDGER to a file on one",
                 ledger_path, strerror(open_errno));
        return VLCS_E_SYSTEM;
    }
    if (!ours_alone(fd, ledger_path, false, err, errsize)) {
        close(fd);
        return VLCS_E_INVALID;
    }
    /* flock serialises the first initialisation; the kernel drops it if the
     * initialising process dies. */
    int code = VLCS_OK;
    struct stat st;
    struct ledger *l = MAP_FAILED;
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
        snprintf(err, errsize, "cannot lock the node ledger %s: %s", ledger_path, strerror(errno));
        code = VLCS_E_SYSTEM;
        goto out;
    }
    if (st.st_size == 0 && ftruncate(fd, sizeof *l) != 0) {
        snprintf(err, errsize, "cannot size the node ledger %s: %s", ledger_path, strerror(errno));
        code = VLCS_E_SYSTEM;
        goto out;
    }
    if (st.st_size != 0 && st.st_size != (off_t)sizeof *l) {
        snprintf(err, errsize,
                 "the node ledger %s was made by another build of vlcs (%lld bytes, this one "
                 "expects %zu); stop the processes using it and remove it",
                 ledger_path, (long long)st.st_size, sizeof *l);
        code = VLCS_E_INVALID;
        goto out;
    }
    l = mmap(NULL, sizeof *l, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (l == MAP_FAILED) {
        snprintf(err, errsize, "cannot map the node ledger %s: %s", ledger_path, strerror(errno));
        code = VLCS_E_SYSTEM;
        goto out;
    }
    if (l->magic == 0) {
        atomic_store(&l->generation, 1);
        ledger_fresh_header(l);
    } else if (l->magic != LEDGER_MAGIC || l->version != LEDGER_VERSION || l->size != sizeof *l) {
        snprintf(err, errsize,
                 "%s is not a node ledger of this vlcs version; stop the processes using it and "
                 "remove it, or set VLCS_NODE_LEDGER to another file",
                 ledger_path);
        code = VLCS_E_INVALID;
        munmap(l, sizeof *l);
        goto out;
    }
    L = l;
out:
    flock(fd, LOCK_UN);
    if (code == VLCS_OK)
        live_fd = fd; /* the mapping stays; the descriptor carries the locks */
    else
        close(fd);
    return code;
}

int node_enable(void (*changed)(uint32_t generation), char *err, size_t errsize)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once);
    int code = VLCS_OK;
    if (node_active())
        goto out;
    if (L != NULL) { /* a forked child: the parent's membership is not its own */
        snprintf(err, errsize, "a forked child cannot join the node; node-wide mode is on in "
                 "its parent, and the child's elastic contexts lend within the child");
        code = VLCS_E_UNSUPPORTED;
        goto out;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu <= 0)
        ncpu = VLCS_MAX_CPUS;
    for (long cpu = 0; cpu < ncpu && cpu < VLCS_MAX_CPUS; cpu++)
        machine.w[cpu / 64] |= UINT64_C(1) << (cpu % 64);
    code = ledger_open(err, errsize);
    if (code != VLCS_OK)
        goto out;
    self = getpid();
    on_plan = changed;
    if (hold_live_lock() != 0) {
        snprintf(err, errsize, "cannot lock a byte of the node ledger %s: %s", ledger_path,
                 strerror(errno));
        close(live_fd);
        live_fd = -1;
        munmap(L, sizeof *L);
        L = NULL;
        code = VLCS_E_SYSTEM;
        goto out;
    }
    atomic_store_explicit(&active, true, memory_order_release);
    /* The watcher blocks every signal: they are the program's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int rc = pthread_create(&t, NULL, watch, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        atomic_store(&active, false);
        close(live_fd); /* drops the lock */
        live_fd = -1;
        munmap(L, sizeof *L);
        L = NULL;
        snprintf(err, errsize, "cannot start the node watcher thread: %s", strerror(rc));
        code = VLCS_E_SYSTEM;
        goto out;
    }
    pthread_detach(t);
    atexit(leave);
out:
    pthread_mutex_unlock(&once);
    return code;
}
