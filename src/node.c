/*
 * node.c - node-wide lending: the elastic contexts of every cooperating
 * process on the machine plan together, through one ledger in shared memory
 * (issue 15; nOS-V's shared scheduler is the model).
 *
 * The ledger is a file on tmpfs (/dev/shm/vlcs-node-<uid>, or
 * VLCS_NODE_LEDGER) mapped by every member.  It holds one slot per elastic
 * context of the node: owner pid, home, bound, busy, weight, and the CPUs the
 * last plan gave it.  The design keeps the shared state small and
 * self-healing:
 *
 *   - one robust, process-shared mutex guards the slots; a member that dies
 *     holding it leaves EOWNERDEAD to the next locker, who drops the dead
 *     member's slots and plans again;
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
#include "elastic_policy.h"
#include "internal.h"

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
#define LEDGER_VERSION 1
#define LEDGER_SLOTS 256
#define REAP_MS 100

struct slot {
    int32_t pid; /* 0: free */
    uint32_t weight;
    uint64_t key;   /* the owner's name for the context */
    uint32_t busy;
    uint32_t pad;
    vmask home, bound;
    vmask current; /* the last plan's share */
};

struct ledger {
    uint64_t magic;
    uint32_t version;
    uint32_t size; /* sizeof(struct ledger): a build with another VLCS_MAX_CPUS differs */
    pthread_mutex_t lock;
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

static uint32_t replan_locked(void);

/* Set under the ledger lock when a plan was stored: the unlocking thread
 * wakes the other members. */
static bool wake_pending;

static void ledger_lock(void)
{
    int rc = pthread_mutex_lock(&L->lock);
    if (rc == EOWNERDEAD) {
        /* Its owner died inside: its slots may be half written, but they are
         * its own, and it is gone; the others get a plan without it. */
        pthread_mutex_consistent(&L->lock);
        reap_locked();
        replan_locked();
    }
}

static void ledger_unlock(void)
{
    bool wake = wake_pending;
    wake_pending = false;
    pthread_mutex_unlock(&L->lock);
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
    }
    elastic_plan(node_in, n + any_freed, node_out);
    for (size_t k = 0; k < n; k++)
        L->slot[index[k]].current = node_out[k];
    wake_pending = true;
    return atomic_fetch_add_explicit(&L->generation, 1, memory_order_release) + 1;
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
    }
    own_generation = replan_locked();
    for (size_t k = 0; k < n; k++) {
        const struct slot *s = own_slot(keys[k]);
        out[k] = s != NULL ? s->current : in[k].home;
    }
    ledger_unlock();
}

void node_read(const uint64_t *keys, size_t n, vmask *out)
{
    ledger_lock();
    for (size_t k = 0; k < n; k++) {
        const struct slot *s = own_slot(keys[k]);
        if (s != NULL)
            out[k] = s->current;
    }
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

/* Opens (and, first, creates) the ledger.  VLCS_OK or a code, with err. */
static int ledger_open(char *err, size_t errsize)
{
    const char *env = getenv("VLCS_NODE_LEDGER");
    if (env != NULL && *env != '\0')
        snprintf(ledger_path, sizeof ledger_path, "%s", env);
    else
        snprintf(ledger_path, sizeof ledger_path, "/dev/shm/vlcs-node-%u", (unsigned)getuid());
    int fd = open(ledger_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errsize,
                 "cannot open the node ledger %s: %s; node-wide mode needs shared memory: mount a "
                 "tmpfs at /dev/shm or set VLCS_NODE_LEDGER to a file on one",
                 ledger_path, strerror(errno));
        return VLCS_E_SYSTEM;
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
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&l->lock, &a);
        pthread_mutexattr_destroy(&a);
        l->version = LEDGER_VERSION;
        l->size = sizeof *l;
        atomic_store(&l->generation, 1);
        __atomic_store_n(&l->magic, LEDGER_MAGIC, __ATOMIC_RELEASE);
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
        live_fd = fd; /* the mapping stays; the descriptor carries the liveness lock */
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
