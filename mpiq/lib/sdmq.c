/* sdmq: a rank's MPI operations in flight, where its debug server reads
 * them without stopping the rank.
 *
 * Preloaded into a rank (LD_PRELOAD) with SDMQ_DIR set, it interposes on
 * MPI's blocking and nonblocking calls through the profiling interface
 * (each MPI_X records the operation, calls PMPI_X, and clears it) and
 * keeps the records in a file of its own, DIR/PID, mapped shared (DIR is
 * SDMQ_DIR, or /tmp/sdmq-UID, the user's alone):
 * the rank's server maps the same file and reads it at any time. The
 * layout is package mpiq's (table.go), version 1. When the file cannot
 * be made, every call goes straight to PMPI_X.
 *
 * It is built against one MPI's mpi.h, not linked with its library: a
 * process that is not an MPI program (the shell that gdb starts a
 * program through) loads it without loading MPI, so Open MPI's
 * predefined objects, which its handles point to, are weak here.
 *
 * A record (slot) is claimed by compare-and-swap, so threads of an
 * MPI_THREAD_MULTIPLE program take slots of their own; a slot's sequence
 * number is odd while it is written, so a reader that finds it odd, or
 * changed after its read, reads again. A nonblocking operation keeps its
 * slot until a wait or test completes its request. */
#define _GNU_SOURCE
#include <mpi.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef OPEN_MPI
#pragma weak ompi_mpi_comm_world
#pragma weak ompi_mpi_comm_null
#pragma weak ompi_mpi_datatype_null
#pragma weak ompi_request_null
#endif

#define SDMQ_MAGIC 0x514d4453u /* "SDMQ", little-endian */
#define SDMQ_VERSION 1
#define SDMQ_SLOTS 256
#define COMMS 64

/* Kinds, as package mpiq names them. */
enum {
    K_SEND = 1, K_SSEND, K_BSEND, K_RSEND, K_RECV, K_SENDRECV, K_PROBE,
    K_ISEND, K_IRECV, K_WAIT, K_WAITALL, K_WAITANY, K_WAITSOME,
    K_BARRIER, K_BCAST, K_REDUCE, K_ALLREDUCE, K_GATHER, K_SCATTER,
    K_ALLGATHER, K_ALLTOALL, K_FINALIZE, K_GATHERV, K_SCATTERV, K_ALLGATHERV,
    K_ALLTOALLV, K_REDUCE_SCATTER, K_REDUCE_SCATTER_BLOCK, K_SCAN, K_EXSCAN,
    K_SENDRECV_REPLACE, K_MPROBE, K_MRECV, K_COMM_SPLIT, K_COMM_DUP,
    K_ISSEND, K_IBARRIER, K_IBCAST, K_IREDUCE, K_IALLREDUCE, K_IGATHER, K_ISCATTER, K_IALLGATHER,
    K_IALLTOALL, K_SEND_INIT, K_RECV_INIT, K_ISENDRECV, K_ISENDRECV_REPLACE
};

/* A peer or root in a record that is not a rank: MPI_ANY_SOURCE, none
 * (collectives without a root, waits), not found, MPI_PROC_NULL. */
#define ANY_SOURCE (-1)
#define NO_RANK (-2)
#define UNKNOWN (-3)
#define PROC_NULL (-4)
/* No peer or root, as record's argument (no MPI rank value). */
#define PEER_NONE INT_MIN

struct header {
    uint32_t magic, version, slots, slot_size;
    int32_t rank, size, pid, reserved;
    int64_t started;
    uint32_t comms, pool; /* communicator entries, and ints in their pool */
    uint8_t pad[16];
};

/* A communicator the rank used, after the slots: its number, its size,
 * and where its members' world ranks start in the pool after the
 * entries. seq is odd while it is written. */
struct comm_entry {
    uint32_t seq, id, size, first;
};
#define POOL 16384

struct slot {
    uint32_t seq;      /* odd while written */
    uint32_t busy;     /* claimed */
    uint16_t kind, flags;
    int32_t peer;      /* world rank, or ANY_SOURCE, NO_RANK, UNKNOWN, PROC_NULL */
    int32_t tag;       /* MPI_ANY_TAG as -1 */
    int32_t comm_size;
    uint32_t comm;     /* 0: MPI_COMM_WORLD; else the library's number */
    int32_t count;     /* elements, or requests for a wait */
    int32_t root;      /* collectives with a root, as a world rank */
    uint32_t tid;
    int64_t bytes;
    uint64_t request;  /* the request of a nonblocking operation */
    int64_t start;     /* CLOCK_MONOTONIC, ns */
    uint64_t caller;   /* the return address into the program */
    uint8_t pad[8];
};

_Static_assert(sizeof(struct header) == 64, "header layout");
_Static_assert(sizeof(struct slot) == 80, "slot layout");

static struct header *table;
static struct slot *slots;
static struct comm_entry *entries;
static int32_t *pool;
static uint32_t pooled; /* ints of the pool taken */

/* now is CLOCK_MONOTONIC_COARSE, in ns: a few ns to read, where
 * CLOCK_MONOTONIC takes tens (a rank's waits are told in tenths of a
 * second; the coarse clock lags by a tick, milliseconds at most). */
static int64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* user_dir is /tmp/sdmq-UID, made if need be, and used only if it is a
 * directory of the user's that no one else may enter. */
static const char *user_dir(char *buf, size_t n)
{
    struct stat st;
    snprintf(buf, n, "/tmp/sdmq-%d", (int)getuid());
    mkdir(buf, 0700);
    if (lstat(buf, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
        return NULL;
    return buf;
}

/* table_path is the table's file, which the process removes as it
 * exits (a process killed leaves it, for the next of its number to
 * truncate). */
static char table_path[4096];

static void remove_table(void) { unlink(table_path); }

/* sweep removes the tables of processes that are gone (killed, so they
 * could not remove their own). */
static void sweep(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end != '\0' || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* not a table, or its process lives */
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    }
    closedir(d);
}

/* open_table maps DIR/PID, made anew with mode 0600: DIR is SDMQ_DIR, or
 * the user's directory in /tmp. */
static void open_table(void)
{
    char *path = table_path, mine[64];
    const char *dir = getenv("SDMQ_DIR");
    size_t size = sizeof(struct header) + SDMQ_SLOTS * sizeof(struct slot) + COMMS * sizeof(struct comm_entry) +
                  POOL * sizeof(int32_t);
    if (dir == NULL || dir[0] == '\0')
        dir = user_dir(mine, sizeof mine);
    if (dir != NULL)
        sweep(dir);
    if (dir == NULL || snprintf(path, sizeof table_path, "%s/%d", dir, (int)getpid()) >= (int)sizeof table_path)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    void *m = MAP_FAILED;
    if (ftruncate(fd, (off_t)size) == 0)
        m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        unlink(path);
        return;
    }
    atexit(remove_table);
    struct header *h = m;
    PMPI_Comm_rank(MPI_COMM_WORLD, &h->rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &h->size);
    h->pid = (int32_t)getpid();
    h->slots = SDMQ_SLOTS;
    h->slot_size = sizeof(struct slot);
    h->comms = COMMS;
    h->pool = POOL;
    h->started = now();
    h->version = SDMQ_VERSION;
    __atomic_store_n(&h->magic, SDMQ_MAGIC, __ATOMIC_RELEASE);
    slots = (struct slot *)(h + 1);
    entries = (struct comm_entry *)(slots + SDMQ_SLOTS);
    pool = (int32_t *)(entries + COMMS);
    table = h;
}

/* Communicators other than MPI_COMM_WORLD: their world ranks, learnt at
 * their first use, numbered from 1. */
static struct {
    MPI_Comm comm;
    int size;
    int *world;
} comms[COMMS];
static int ncomms;
static pthread_mutex_t comms_mu = PTHREAD_MUTEX_INITIALIZER;

/* publish writes communicator id's members into the table, should the
 * pool hold them (else its entry has none: size 0). */
static void publish(uint32_t id, const int *world, int n)
{
    struct comm_entry *e = &entries[id - 1];
    __atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);
    e->id = id;
    e->size = 0;
    if (pooled + (uint32_t)n <= POOL) {
        memcpy(pool + pooled, world, n * sizeof(int32_t));
        e->first = pooled;
        e->size = (uint32_t)n;
        pooled += (uint32_t)n;
    }
    __atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);
}

/* world translates rank r of comm to a world rank; *id is comm's number. */
static int world(MPI_Comm comm, int r, uint32_t *id, int *size)
{
    if (comm == MPI_COMM_WORLD) {
        *id = 0;
        *size = table->size;
        return r;
    }
    if (r < 0)
        return r;
    pthread_mutex_lock(&comms_mu);
    int i;
    for (i = 0; i < ncomms && comms[i].comm != comm; i++)
        ;
    if (i == ncomms && ncomms < COMMS) {
        MPI_Group g, wg;
        int n;
        PMPI_Comm_size(comm, &n);
        int *mine = malloc(2 * n * sizeof(int));
        if (mine != NULL && PMPI_Comm_group(comm, &g) == MPI_SUCCESS) {
            PMPI_Comm_group(MPI_COMM_WORLD, &wg);
            for (int k = 0; k < n; k++)
                mine[k] = k;
            PMPI_Group_translate_ranks(g, n, mine, wg, mine + n);
            PMPI_Group_free(&g);
            PMPI_Group_free(&wg);
            comms[i].comm = comm;
            comms[i].size = n;
            comms[i].world = mine + n;
            ncomms++;
            publish(i + 1, mine + n, n);
        } else {
            free(mine);
        }
    }
    int w = UNKNOWN;
    *id = (uint32_t)(i + 1);
    *size = 0;
    if (i < ncomms) {
        *size = comms[i].size;
        if (r < comms[i].size)
            w = comms[i].world[r];
    }
    pthread_mutex_unlock(&comms_mu);
    return w;
}

/* A thread's own variables take the initial-exec model: the library is
 * loaded with the program (preloaded), never opened later, so each is one
 * load at a fixed offset from the thread pointer rather than a call of
 * __tls_get_addr in every wrapper. */
#define TLS __thread __attribute__((tls_model("initial-exec")))

/* in_fortran is set while a Fortran binding's wrapper runs the MPI's own:
 * what that calls of the C bindings (MPICH's do) is its, recorded once. */
static TLS int in_fortran;

/* A thread's own: its id, the slot it took last (it is likely free
 * again), the last type it asked the size of. */
static TLS uint32_t tid;
static TLS int hint;
static TLS MPI_Datatype last_type = MPI_DATATYPE_NULL;
static TLS int last_size;

/* high is one past the highest slot ever taken, for done's search. */
static int high;

/* set_seq makes a slot's sequence number odd (being written) or even:
 * the slot is its claimer's alone, so a store orders it, no locked add. */
static void set_seq(struct slot *s, uint32_t seq) { __atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE); }

/* claim takes a free slot (the one the thread took last, if free) and
 * starts writing it: NULL without a table or a free slot (the operation
 * is then not recorded), or inside a Fortran binding's own. */
static struct slot *claim(void)
{
    if (table == NULL || in_fortran)
        return NULL;
    for (int k = 0; k < SDMQ_SLOTS; k++) {
        int i = (hint + k) % SDMQ_SLOTS;
        uint32_t free_ = 0;
        if (__atomic_load_n(&slots[i].busy, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&slots[i].busy, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            hint = i;
            if (i >= __atomic_load_n(&high, __ATOMIC_RELAXED))
                __atomic_store_n(&high, i + 1, __ATOMIC_RELEASE); /* racing stores: done scans a little less at worst */
            set_seq(&slots[i], slots[i].seq + 1);
            return &slots[i];
        }
    }
    return NULL;
}

/* A thread's blocking calls come one after another: they share a slot of
 * the thread's own, taken at its first and kept busy (no operation while
 * its kind is 0), so that a call costs no compare-and-swap. */
static TLS struct slot *mine;

/* own starts writing the thread's slot: NULL as claim gives it. */
static struct slot *own(void)
{
    if (mine == NULL)
        mine = claim();
    else if (table != NULL && !in_fortran)
        set_seq(mine, mine->seq + 1);
    else
        return NULL;
    return mine;
}

/* finish ends a blocking call of the thread's slot. */
static void finish(struct slot *s)
{
    if (s == NULL)
        return;
    set_seq(s, s->seq + 1);
    s->kind = 0;
    set_seq(s, s->seq + 1);
}

/* record fills a claimed slot and publishes it. */
static void record(struct slot *s, int kind, MPI_Comm comm, int peer, int tag, MPI_Count count, MPI_Datatype type,
                   int root, void *caller)
{
    int size = 0;
    s->kind = (uint16_t)kind;
    s->flags = 0;
    s->peer = NO_RANK;
    s->root = NO_RANK;
    s->comm = 0;
    s->comm_size = 0;
    if (comm != MPI_COMM_NULL) {
        world(comm, 0, &s->comm, &size); /* the communicator's number and size */
        if (peer != PEER_NONE)
            s->peer = peer == MPI_ANY_SOURCE ? ANY_SOURCE
                      : peer == MPI_PROC_NULL ? PROC_NULL
                                              : world(comm, peer, &s->comm, &size);
        if (root != PEER_NONE)
            s->root = world(comm, root, &s->comm, &size);
        s->comm_size = size;
    }
    s->tag = tag == MPI_ANY_TAG ? -1 : tag;
    s->count = count > INT32_MAX ? INT32_MAX : (int32_t)count;
    if (type != last_type && type != MPI_DATATYPE_NULL) {
        last_size = 0;
        PMPI_Type_size(type, &last_size);
        last_type = type;
    }
    s->bytes = type == MPI_DATATYPE_NULL ? 0 : (int64_t)count * last_size;
    s->request = 0;
    if (tid == 0)
        tid = (uint32_t)gettid();
    s->tid = tid;
    s->start = now();
    s->caller = (uint64_t)(uintptr_t)caller;
    set_seq(s, s->seq + 1);
}

/* release frees a slot: a reader takes a slot for an operation only
 * while it is busy. */
static void release(struct slot *s)
{
    if (s != NULL)
        __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* keep makes a recorded nonblocking operation wait for its request. */
static void keep(struct slot *s, MPI_Request req)
{
    if (s == NULL)
        return;
    if (req == MPI_REQUEST_NULL) {
        release(s);
        return;
    }
    set_seq(s, s->seq + 1);
    s->request = (uint64_t)(uintptr_t)req;
    set_seq(s, s->seq + 1);
}

/* done releases the slots of requests that completed: reqs as they were
 * before the call, after as the call left them (MPI_REQUEST_NULL where
 * one completed; NULL when each did). */
static void done(const MPI_Request *before, const MPI_Request *after, int n)
{
    if (table == NULL)
        return;
    int top = __atomic_load_n(&high, __ATOMIC_ACQUIRE);
    for (int k = 0; k < n; k++) {
        if (before[k] == MPI_REQUEST_NULL || (after != NULL && after[k] != MPI_REQUEST_NULL))
            continue;
        uint64_t r = (uint64_t)(uintptr_t)before[k];
        for (int i = 0; i < top; i++)
            if (slots[i].request == r && __atomic_load_n(&slots[i].busy, __ATOMIC_ACQUIRE)) {
                slots[i].request = 0;
                release(&slots[i]);
                break;
            }
    }
}

#define CALLER __builtin_return_address(0)

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        open_table();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        open_table();
    return rc;
}

/* BLOCKING wraps a blocking call: recorded while it runs. */
#define BLOCKING(kind, comm, peer, tag, count, type, root, call) \
    do { \
        struct slot *s_ = own(); \
        if (s_ != NULL) \
            record(s_, kind, comm, peer, tag, count, type, root, CALLER); \
        int rc_ = call; \
        finish(s_); \
        return rc_; \
    } while (0)

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    BLOCKING(K_SEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Send(buf, count, type, dest, tag, comm));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    BLOCKING(K_SSEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Ssend(buf, count, type, dest, tag, comm));
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    BLOCKING(K_BSEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Bsend(buf, count, type, dest, tag, comm));
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    BLOCKING(K_RSEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Rsend(buf, count, type, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    BLOCKING(K_RECV, comm, source, tag, count, type, PEER_NONE, PMPI_Recv(buf, count, type, source, tag, comm, status));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
                 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    /* The receive is what waits for another rank: its peer and tag. */
    BLOCKING(K_SENDRECV, comm, source, rtag, rcount, rtype, PEER_NONE,
             PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status));
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    BLOCKING(K_PROBE, comm, source, tag, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Probe(source, tag, comm, status));
}

int MPI_Barrier(MPI_Comm comm)
{
    BLOCKING(K_BARRIER, comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Barrier(comm));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    BLOCKING(K_BCAST, comm, PEER_NONE, 0, count, type, root, PMPI_Bcast(buf, count, type, root, comm));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    BLOCKING(K_REDUCE, comm, PEER_NONE, 0, count, type, root, PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    BLOCKING(K_ALLREDUCE, comm, PEER_NONE, 0, count, type, PEER_NONE, PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
               MPI_Comm comm)
{
    BLOCKING(K_GATHER, comm, PEER_NONE, 0, scount, stype, root,
             PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                MPI_Comm comm)
{
    BLOCKING(K_SCATTER, comm, PEER_NONE, 0, rcount, rtype, root,
             PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    BLOCKING(K_ALLGATHER, comm, PEER_NONE, 0, scount, stype, PEER_NONE,
             PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm)
{
    BLOCKING(K_ALLTOALL, comm, PEER_NONE, 0, scount, stype, PEER_NONE,
             PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[],
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    BLOCKING(K_GATHERV, comm, PEER_NONE, 0, scount, stype, root,
             PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm)
{
    BLOCKING(K_SCATTERV, comm, PEER_NONE, 0, rcount, rtype, root,
             PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[],
                   MPI_Datatype rtype, MPI_Comm comm)
{
    BLOCKING(K_ALLGATHERV, comm, PEER_NONE, 0, scount, stype, PEER_NONE,
             PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    BLOCKING(K_ALLTOALLV, comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE,
             PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    BLOCKING(K_REDUCE_SCATTER, comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE,
             PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm));
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    BLOCKING(K_REDUCE_SCATTER_BLOCK, comm, PEER_NONE, 0, rcount, type, PEER_NONE,
             PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm));
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    BLOCKING(K_SCAN, comm, PEER_NONE, 0, count, type, PEER_NONE, PMPI_Scan(sbuf, rbuf, count, type, op, comm));
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    BLOCKING(K_EXSCAN, comm, PEER_NONE, 0, count, type, PEER_NONE, PMPI_Exscan(sbuf, rbuf, count, type, op, comm));
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                         MPI_Comm comm, MPI_Status *status)
{
    BLOCKING(K_SENDRECV_REPLACE, comm, source, rtag, count, type, PEER_NONE,
             PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status));
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    BLOCKING(K_MPROBE, comm, source, tag, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Mprobe(source, tag, comm, message, status));
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    /* A matched message: it waits for no one, but for its data. */
    BLOCKING(K_MRECV, MPI_COMM_NULL, PEER_NONE, 0, count, type, PEER_NONE, PMPI_Mrecv(buf, count, type, message, status));
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    BLOCKING(K_COMM_SPLIT, comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Comm_split(comm, color, key, newcomm));
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    BLOCKING(K_COMM_DUP, comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Comm_dup(comm, newcomm));
}

int MPI_Finalize(void)
{
    BLOCKING(K_FINALIZE, MPI_COMM_WORLD, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Finalize());
}

/* NONBLOCKING wraps a call that starts an operation: recorded until its
 * request completes. */
#define NONBLOCKING(kind, comm, peer, tag, count, type, root, call) \
    do { \
        struct slot *s_ = claim(); \
        if (s_ != NULL) \
            record(s_, kind, comm, peer, tag, count, type, root, CALLER); \
        int rc_ = call; \
        if (s_ != NULL) \
            keep(s_, rc_ == MPI_SUCCESS ? *request : MPI_REQUEST_NULL); \
        return rc_; \
    } while (0)

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Isend(buf, count, type, dest, tag, comm, request));
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISSEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Issend(buf, count, type, dest, tag, comm, request));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IRECV, comm, source, tag, count, type, PEER_NONE, PMPI_Irecv(buf, count, type, source, tag, comm, request));
}

/* The nonblocking collectives: recorded, as the others, until a wait or
 * test completes their request. */
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IBARRIER, comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, PMPI_Ibarrier(comm, request));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IBCAST, comm, PEER_NONE, 0, count, type, root, PMPI_Ibcast(buf, count, type, root, comm, request));
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *request)
{
    NONBLOCKING(K_IREDUCE, comm, PEER_NONE, 0, count, type, root,
                PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, request));
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request)
{
    NONBLOCKING(K_IALLREDUCE, comm, PEER_NONE, 0, count, type, PEER_NONE,
                PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, request));
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IGATHER, comm, PEER_NONE, 0, scount, stype, root,
                PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request));
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISCATTER, comm, PEER_NONE, 0, rcount, rtype, root,
                PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, request));
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                   MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLGATHER, comm, PEER_NONE, 0, scount, stype, PEER_NONE,
                PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, request));
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_IALLTOALL, comm, PEER_NONE, 0, scount, stype, PEER_NONE,
                PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, request));
}

/* Persistent requests: what MPI_Send_init and MPI_Recv_init set up, by
 * request, recorded as an operation from each MPI_Start until a wait or
 * test completes it. */
#define PERSISTENT 256
static struct persistent {
    MPI_Request req;
    int used, kind, peer, tag, count;
    MPI_Comm comm;
    MPI_Datatype type;
} persistent[PERSISTENT];
static pthread_mutex_t persistent_mu = PTHREAD_MUTEX_INITIALIZER;

/* remember keeps a persistent request's operation; beyond PERSISTENT
 * requests, the others' starts go unrecorded. */
static void remember(MPI_Request req, int kind, MPI_Comm comm, int peer, int tag, int count, MPI_Datatype type)
{
    if (table == NULL)
        return;
    pthread_mutex_lock(&persistent_mu);
    for (int i = 0; i < PERSISTENT; i++)
        if (!persistent[i].used || persistent[i].req == req) {
            persistent[i] = (struct persistent){req, 1, kind, peer, tag, count, comm, type};
            break;
        }
    pthread_mutex_unlock(&persistent_mu);
}

/* started records the start of a persistent request's operation. */
static void started(MPI_Request req, void *caller)
{
    if (table == NULL)
        return;
    struct persistent p = {.used = 0};
    pthread_mutex_lock(&persistent_mu);
    for (int i = 0; i < PERSISTENT; i++)
        if (persistent[i].used && persistent[i].req == req) {
            p = persistent[i];
            break;
        }
    pthread_mutex_unlock(&persistent_mu);
    struct slot *s;
    if (!p.used || (s = claim()) == NULL)
        return;
    record(s, p.kind, p.comm, p.peer, p.tag, p.count, p.type, PEER_NONE, caller);
    keep(s, req);
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Send_init(buf, count, type, dest, tag, comm, request);
    if (rc == MPI_SUCCESS)
        remember(*request, K_SEND_INIT, comm, dest, tag, count, type);
    return rc;
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    int rc = PMPI_Recv_init(buf, count, type, source, tag, comm, request);
    if (rc == MPI_SUCCESS)
        remember(*request, K_RECV_INIT, comm, source, tag, count, type);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    int rc = PMPI_Start(request);
    if (rc == MPI_SUCCESS)
        started(*request, CALLER);
    return rc;
}

int MPI_Startall(int count, MPI_Request requests[])
{
    int rc = PMPI_Startall(count, requests);
    for (int i = 0; rc == MPI_SUCCESS && i < count; i++)
        started(requests[i], CALLER);
    return rc;
}

int MPI_Request_free(MPI_Request *request)
{
    MPI_Request before = *request;
    int rc = PMPI_Request_free(request);
    if (rc == MPI_SUCCESS && table != NULL) {
        pthread_mutex_lock(&persistent_mu);
        for (int i = 0; i < PERSISTENT; i++)
            if (persistent[i].used && persistent[i].req == before)
                persistent[i].used = 0;
        pthread_mutex_unlock(&persistent_mu);
        done(&before, NULL, 1); /* MPI completes it unseen: no longer one to wait for */
    }
    return rc;
}

#if MPI_VERSION >= 4
/* MPI-4's nonblocking send-receives, and the large-count entry points,
 * recorded as the routines they are of. */
int MPI_Isendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
                  MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISENDRECV, comm, source, rtag, rcount, rtype, PEER_NONE,
                PMPI_Isendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, request));
}

int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                          MPI_Comm comm, MPI_Request *request)
{
    NONBLOCKING(K_ISENDRECV_REPLACE, comm, source, rtag, count, type, PEER_NONE,
                PMPI_Isendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, request));
}

int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    BLOCKING(K_SEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Send_c(buf, count, type, dest, tag, comm));
}

int MPI_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    BLOCKING(K_SSEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Ssend_c(buf, count, type, dest, tag, comm));
}

int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    BLOCKING(K_RECV, comm, source, tag, count, type, PEER_NONE, PMPI_Recv_c(buf, count, type, source, tag, comm, status));
}

int MPI_Sendrecv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                   MPI_Count rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    BLOCKING(K_SENDRECV, comm, source, rtag, rcount, rtype, PEER_NONE,
             PMPI_Sendrecv_c(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status));
}

int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    NONBLOCKING(K_ISEND, comm, dest, tag, count, type, PEER_NONE, PMPI_Isend_c(buf, count, type, dest, tag, comm, request));
}

int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    NONBLOCKING(K_IRECV, comm, source, tag, count, type, PEER_NONE,
                PMPI_Irecv_c(buf, count, type, source, tag, comm, request));
}

int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm)
{
    BLOCKING(K_BCAST, comm, PEER_NONE, 0, count, type, root, PMPI_Bcast_c(buf, count, type, root, comm));
}

int MPI_Reduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    BLOCKING(K_REDUCE, comm, PEER_NONE, 0, count, type, root, PMPI_Reduce_c(sbuf, rbuf, count, type, op, root, comm));
}

int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    BLOCKING(K_ALLREDUCE, comm, PEER_NONE, 0, count, type, PEER_NONE, PMPI_Allreduce_c(sbuf, rbuf, count, type, op, comm));
}
#endif

/* The waits: recorded while they wait (count: the requests), and the
 * operations of the requests they complete released. */
int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MPI_Request before = *request;
    struct slot *s = own();
    if (s != NULL)
        record(s, K_WAIT, MPI_COMM_NULL, PEER_NONE, 0, 1, MPI_DATATYPE_NULL, PEER_NONE, CALLER);
    int rc = PMPI_Wait(request, status);
    finish(s);
    done(&before, NULL, 1);
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    MPI_Request small[64], *before = count <= 64 ? small : malloc(count * sizeof(MPI_Request));
    if (before != NULL)
        memcpy(before, requests, count * sizeof(MPI_Request));
    struct slot *s = own();
    if (s != NULL)
        record(s, K_WAITALL, MPI_COMM_NULL, PEER_NONE, 0, count, MPI_DATATYPE_NULL, PEER_NONE, CALLER);
    int rc = PMPI_Waitall(count, requests, statuses);
    finish(s);
    /* On success every request completed, persistent ones too, whose
     * handles stay; on an error, those left null did. */
    if (before != NULL)
        done(before, rc == MPI_SUCCESS ? NULL : requests, count);
    if (before != small)
        free(before);
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    struct slot *s = own();
    if (s != NULL)
        record(s, K_WAITANY, MPI_COMM_NULL, PEER_NONE, 0, count, MPI_DATATYPE_NULL, PEER_NONE, CALLER);
    MPI_Request chosen = MPI_REQUEST_NULL;
    MPI_Request small[64], *before = count <= 64 ? small : malloc(count * sizeof(MPI_Request));
    if (before != NULL)
        memcpy(before, requests, count * sizeof(MPI_Request));
    int rc = PMPI_Waitany(count, requests, index, status);
    finish(s);
    if (before != NULL && *index >= 0 && *index < count)
        chosen = before[*index];
    done(&chosen, NULL, 1);
    if (before != small)
        free(before);
    return rc;
}

/* done_some releases the requests of before that indices name. */
static void done_some(const MPI_Request *before, int count, const int *indices, int n)
{
    for (int k = 0; before != NULL && k < n; k++)
        if (indices[k] >= 0 && indices[k] < count)
            done(&before[indices[k]], NULL, 1);
}

int MPI_Waitsome(int count, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    struct slot *s = own();
    if (s != NULL)
        record(s, K_WAITSOME, MPI_COMM_NULL, PEER_NONE, 0, count, MPI_DATATYPE_NULL, PEER_NONE, CALLER);
    MPI_Request small[64], *before = count <= 64 ? small : malloc(count * sizeof(MPI_Request));
    if (before != NULL)
        memcpy(before, requests, count * sizeof(MPI_Request));
    int rc = PMPI_Waitsome(count, requests, outcount, indices, statuses);
    finish(s);
    if (*outcount != MPI_UNDEFINED)
        done_some(before, count, indices, *outcount);
    if (before != small)
        free(before);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    MPI_Request small[64], *before = count <= 64 ? small : malloc(count * sizeof(MPI_Request));
    if (before != NULL)
        memcpy(before, requests, count * sizeof(MPI_Request));
    int rc = PMPI_Testany(count, requests, index, flag, status);
    if (*flag && *index != MPI_UNDEFINED)
        done_some(before, count, index, 1);
    if (before != small)
        free(before);
    return rc;
}

int MPI_Testsome(int count, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    MPI_Request small[64], *before = count <= 64 ? small : malloc(count * sizeof(MPI_Request));
    if (before != NULL)
        memcpy(before, requests, count * sizeof(MPI_Request));
    int rc = PMPI_Testsome(count, requests, outcount, indices, statuses);
    if (*outcount != MPI_UNDEFINED)
        done_some(before, count, indices, *outcount);
    if (before != small)
        free(before);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    MPI_Request before = *request;
    int rc = PMPI_Test(request, flag, status);
    if (*flag)
        done(&before, NULL, 1);
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    MPI_Request small[64], *before = count <= 64 ? small : malloc(count * sizeof(MPI_Request));
    if (before != NULL)
        memcpy(before, requests, count * sizeof(MPI_Request));
    int rc = PMPI_Testall(count, requests, flag, statuses);
    if (*flag && before != NULL)
        done(before, rc == MPI_SUCCESS ? NULL : requests, count);
    if (before != small)
        free(before);
    return rc;
}

/* The Fortran bindings (mpif.h and the mpi module: mpi_send_, and
 * mpi_send__ for compilers that add two underscores; Open MPI's shared
 * implementation, ompi_send_f, which its mpi_f08 bindings call): Open
 * MPI's call PMPI_X, past the C wrappers, so they are wrapped too. Each
 * wrapper records the call (handles converted with PMPI_X_f2c) and calls
 * the MPI's own, found by name after this library. */

typedef MPI_Fint F;

/* A Fortran handle for no communicator (a wait's). */
#define F_COMM_NULL PMPI_Comm_c2f(MPI_COMM_NULL)

/* next finds the MPI's own definition of name, once. */
#define NEXT(name, type) \
    static type next_; \
    if (next_ == NULL) \
        next_ = (type)dlsym(RTLD_NEXT, name); \
    if (next_ == NULL) { \
        fprintf(stderr, "sdmq: no %s in the program's MPI\n", name); \
        abort(); \
    }

/* FCALL records a Fortran call while the MPI's own runs it. */
#define FCALL(kind, comm, peer, tag, count, type, root, call) \
    do { \
        struct slot *s_ = own(); \
        if (s_ != NULL) \
            record(s_, kind, PMPI_Comm_f2c(comm), peer, tag, count, type, root, CALLER); \
        in_fortran++; \
        call; \
        in_fortran--; \
        finish(s_); \
    } while (0)

#define P(...) __VA_ARGS__

/* OK says whether a Fortran call succeeded: mpi_f08's error argument is
 * optional, absent as NULL. */
#define OK(ierr) ((ierr) == NULL || *(ierr) == MPI_SUCCESS)

typedef void (*init_f)(F *);
static void f_init(init_f next, F *ierr)
{
    in_fortran++;
    next(ierr);
    in_fortran--;
    if (OK(ierr) && table == NULL)
        open_table();
}
void mpi_init_(F *ierr)
{
    NEXT("mpi_init_", init_f);
    f_init(next_, ierr);
}
void mpi_init__(F *ierr) __attribute__((alias("mpi_init_")));
void ompi_init_f(F *ierr)
{
    NEXT("ompi_init_f", init_f);
    f_init(next_, ierr);
}
void mpi_init_f08_(F *ierr)
{
    NEXT("mpi_init_f08_", init_f);
    f_init(next_, ierr);
}

typedef void (*init_thread_f)(F *, F *, F *);
static void f_init_thread(init_thread_f next, F *required, F *provided, F *ierr)
{
    in_fortran++;
    next(required, provided, ierr);
    in_fortran--;
    if (OK(ierr) && table == NULL)
        open_table();
}
void mpi_init_thread_(F *required, F *provided, F *ierr)
{
    NEXT("mpi_init_thread_", init_thread_f);
    f_init_thread(next_, required, provided, ierr);
}
void mpi_init_thread__(F *required, F *provided, F *ierr) __attribute__((alias("mpi_init_thread_")));
void ompi_init_thread_f(F *required, F *provided, F *ierr)
{
    NEXT("ompi_init_thread_f", init_thread_f);
    f_init_thread(next_, required, provided, ierr);
}
void mpi_init_thread_f08_(F *required, F *provided, F *ierr)
{
    NEXT("mpi_init_thread_f08_", init_thread_f);
    f_init_thread(next_, required, provided, ierr);
}

/* DEFINE defines one wrapper under its four names from an impl taking
 * the MPI's own as its first argument: mpi_x_, mpi_x__, Open MPI's
 * ompi_x_f, and MPICH's mpi_f08 binding, mpi_x_f08ts_ for a routine with
 * a buffer (passed as a descriptor, a pointer as the others) and
 * mpi_x_f08_ for the others (f08 the suffix). */
#define DEFINE(lower, f08, type, params, args) \
    void mpi_##lower##_ params \
    { \
        NEXT("mpi_" #lower "_", type); \
        lower##_impl(next_, P args); \
    } \
    void mpi_##lower##__ params __attribute__((alias("mpi_" #lower "_"))); \
    void ompi_##lower##_f params \
    { \
        NEXT("ompi_" #lower "_f", type); \
        lower##_impl(next_, P args); \
    } \
    void mpi_##lower##_##f08##_ params \
    { \
        NEXT("mpi_" #lower "_" #f08 "_", type); \
        lower##_impl(next_, P args); \
    }

typedef void (*send_f)(void *, F *, F *, F *, F *, F *, F *);
#define SENDLIKE(lower, kind) \
    static void lower##_impl(send_f next, void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *ierr) \
    { \
        FCALL(kind, *comm, *dest, *tag, *count, PMPI_Type_f2c(*type), PEER_NONE, next(buf, count, type, dest, tag, comm, ierr)); \
    } \
    DEFINE(lower, f08ts, send_f, (void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *ierr), (buf, count, type, dest, tag, comm, ierr))
SENDLIKE(send, K_SEND)
SENDLIKE(ssend, K_SSEND)
SENDLIKE(bsend, K_BSEND)
SENDLIKE(rsend, K_RSEND)

typedef void (*recv_f)(void *, F *, F *, F *, F *, F *, F *, F *);
static void recv_impl(recv_f next, void *buf, F *count, F *type, F *source, F *tag, F *comm, F *status, F *ierr)
{
    FCALL(K_RECV, *comm, *source, *tag, *count, PMPI_Type_f2c(*type), PEER_NONE,
          next(buf, count, type, source, tag, comm, status, ierr));
}
DEFINE(recv, f08ts, recv_f, (void *buf, F *count, F *type, F *source, F *tag, F *comm, F *status, F *ierr),
        (buf, count, type, source, tag, comm, status, ierr))

typedef void (*sendrecv_f)(void *, F *, F *, F *, F *, void *, F *, F *, F *, F *, F *, F *, F *);
static void sendrecv_impl(sendrecv_f next, void *sbuf, F *scount, F *stype, F *dest, F *stag, void *rbuf, F *rcount,
                          F *rtype, F *source, F *rtag, F *comm, F *status, F *ierr)
{
    FCALL(K_SENDRECV, *comm, *source, *rtag, *rcount, PMPI_Type_f2c(*rtype), PEER_NONE,
          next(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status, ierr));
}
DEFINE(sendrecv, f08ts, sendrecv_f,
        (void *sbuf, F *scount, F *stype, F *dest, F *stag, void *rbuf, F *rcount, F *rtype, F *source, F *rtag, F *comm,
         F *status, F *ierr),
        (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status, ierr))

typedef void (*probe_f)(F *, F *, F *, F *, F *);
static void probe_impl(probe_f next, F *source, F *tag, F *comm, F *status, F *ierr)
{
    FCALL(K_PROBE, *comm, *source, *tag, 0, MPI_DATATYPE_NULL, PEER_NONE, next(source, tag, comm, status, ierr));
}
DEFINE(probe, f08, probe_f, (F *source, F *tag, F *comm, F *status, F *ierr), (source, tag, comm, status, ierr))

typedef void (*isend_f)(void *, F *, F *, F *, F *, F *, F *, F *);
#define ISENDLIKE(lower, kind) \
    static void lower##_impl(isend_f next, void *buf, F *count, F *type, F *peer, F *tag, F *comm, F *req, F *ierr) \
    { \
        struct slot *s_ = claim(); \
        if (s_ != NULL) \
            record(s_, kind, PMPI_Comm_f2c(*comm), *peer, *tag, *count, PMPI_Type_f2c(*type), PEER_NONE, CALLER); \
        in_fortran++; \
        next(buf, count, type, peer, tag, comm, req, ierr); \
        in_fortran--; \
        keep(s_, OK(ierr) ? PMPI_Request_f2c(*req) : MPI_REQUEST_NULL); \
    } \
    DEFINE(lower, f08ts, isend_f, (void *buf, F *count, F *type, F *peer, F *tag, F *comm, F *req, F *ierr), \
            (buf, count, type, peer, tag, comm, req, ierr))
ISENDLIKE(isend, K_ISEND)
ISENDLIKE(issend, K_ISSEND)
ISENDLIKE(irecv, K_IRECV)

/* A Fortran wait: the C requests before, to release those that complete. */
static MPI_Request *c_requests(int n, const F *reqs, MPI_Request *small)
{
    MPI_Request *c = n <= 64 ? small : malloc(n * sizeof(MPI_Request));
    for (int i = 0; c != NULL && i < n; i++)
        c[i] = PMPI_Request_f2c(reqs[i]);
    return c;
}

typedef void (*wait_f)(F *, F *, F *);
static void wait_impl(wait_f next, F *req, F *status, F *ierr)
{
    MPI_Request before = PMPI_Request_f2c(*req);
    FCALL(K_WAIT, F_COMM_NULL, PEER_NONE, 0, 1, MPI_DATATYPE_NULL, PEER_NONE, next(req, status, ierr));
    done(&before, NULL, 1);
}
DEFINE(wait, f08, wait_f, (F *req, F *status, F *ierr), (req, status, ierr))

typedef void (*waitall_f)(F *, F *, F *, F *);
static void waitall_impl(waitall_f next, F *count, F *reqs, F *statuses, F *ierr)
{
    MPI_Request small[64], *before = c_requests(*count, reqs, small);
    FCALL(K_WAITALL, F_COMM_NULL, PEER_NONE, 0, *count, MPI_DATATYPE_NULL, PEER_NONE,
          next(count, reqs, statuses, ierr));
    if (before != NULL && OK(ierr))
        done(before, NULL, *count);
    if (before != small)
        free(before);
}
DEFINE(waitall, f08, waitall_f, (F *count, F *reqs, F *statuses, F *ierr), (count, reqs, statuses, ierr))

typedef void (*waitany_f)(F *, F *, F *, F *, F *);
static void waitany_impl(waitany_f next, F *count, F *reqs, F *index, F *status, F *ierr)
{
    MPI_Request small[64], *before = c_requests(*count, reqs, small);
    FCALL(K_WAITANY, F_COMM_NULL, PEER_NONE, 0, *count, MPI_DATATYPE_NULL, PEER_NONE,
          next(count, reqs, index, status, ierr));
    int i = *index - 1; /* Fortran counts from 1 */
    if (before != NULL && i >= 0 && i < *count)
        done(&before[i], NULL, 1);
    if (before != small)
        free(before);
}
DEFINE(waitany, f08, waitany_f, (F *count, F *reqs, F *index, F *status, F *ierr), (count, reqs, index, status, ierr))

typedef void (*test_f)(F *, F *, F *, F *);
static void test_impl(test_f next, F *req, F *flag, F *status, F *ierr)
{
    MPI_Request before = PMPI_Request_f2c(*req);
    in_fortran++;
    next(req, flag, status, ierr);
    in_fortran--;
    if (*flag)
        done(&before, NULL, 1);
}
DEFINE(test, f08, test_f, (F *req, F *flag, F *status, F *ierr), (req, flag, status, ierr))

typedef void (*barrier_f)(F *, F *);
static void barrier_impl(barrier_f next, F *comm, F *ierr)
{
    FCALL(K_BARRIER, *comm, PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, next(comm, ierr));
}
DEFINE(barrier, f08, barrier_f, (F *comm, F *ierr), (comm, ierr))

typedef void (*bcast_f)(void *, F *, F *, F *, F *, F *);
static void bcast_impl(bcast_f next, void *buf, F *count, F *type, F *root, F *comm, F *ierr)
{
    FCALL(K_BCAST, *comm, PEER_NONE, 0, *count, PMPI_Type_f2c(*type), *root, next(buf, count, type, root, comm, ierr));
}
DEFINE(bcast, f08ts, bcast_f, (void *buf, F *count, F *type, F *root, F *comm, F *ierr), (buf, count, type, root, comm, ierr))

typedef void (*reduce_f)(void *, void *, F *, F *, F *, F *, F *, F *);
static void reduce_impl(reduce_f next, void *sbuf, void *rbuf, F *count, F *type, F *op, F *root, F *comm, F *ierr)
{
    FCALL(K_REDUCE, *comm, PEER_NONE, 0, *count, PMPI_Type_f2c(*type), *root,
          next(sbuf, rbuf, count, type, op, root, comm, ierr));
}
DEFINE(reduce, f08ts, reduce_f, (void *sbuf, void *rbuf, F *count, F *type, F *op, F *root, F *comm, F *ierr),
        (sbuf, rbuf, count, type, op, root, comm, ierr))

typedef void (*allreduce_f)(void *, void *, F *, F *, F *, F *, F *);
static void allreduce_impl(allreduce_f next, void *sbuf, void *rbuf, F *count, F *type, F *op, F *comm, F *ierr)
{
    FCALL(K_ALLREDUCE, *comm, PEER_NONE, 0, *count, PMPI_Type_f2c(*type), PEER_NONE,
          next(sbuf, rbuf, count, type, op, comm, ierr));
}
DEFINE(allreduce, f08ts, allreduce_f, (void *sbuf, void *rbuf, F *count, F *type, F *op, F *comm, F *ierr),
        (sbuf, rbuf, count, type, op, comm, ierr))

typedef void (*finalize_f)(F *);
static void finalize_impl(finalize_f next, F *ierr)
{
    FCALL(K_FINALIZE, PMPI_Comm_c2f(MPI_COMM_WORLD), PEER_NONE, 0, 0, MPI_DATATYPE_NULL, PEER_NONE, next(ierr));
}
DEFINE(finalize, f08, finalize_f, (F *ierr), (ierr))
