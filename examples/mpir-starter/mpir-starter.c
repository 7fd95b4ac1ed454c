/* mpir-starter: a small parallel job starter that implements the starter
 * side of the MPIR process-acquisition interface, so that a debugger's
 * side of it can be tried on every branch the interface has.
 *
 *   mpir-starter [-n N] [--hang] [--after-input] [--abort MESSAGE] [--host [RANK=]NAME]...
 *
 * starts N ranks (default 4), each a copy of this program running
 * rank_main(). Like a real starter, its spawning and its call of
 * MPIR_Breakpoint happen on a thread of its own while the main thread
 * waits. --hang keeps the ranks from finishing: the last one spins in
 * compute_forever(), the others wait in pause(). --abort calls
 * MPIR_Breakpoint in the ABORTING state with MESSAGE. --host puts NAME into
 * the proctable as the host of every rank, or of RANK. --after-input spawns
 * only once a line arrives on standard input, as a starter whose job is not
 * up yet (its proctable empty).
 *
 * Symbols whose mere presence means something are chosen when building:
 *   -DRANK0       no MPIR_i_am_starter: the starter itself is rank 0
 *   -DPARTIAL     MPIR_partial_attach_ok: the starter holds its ranks stopped
 *                 (SIGSTOP) and lets them all go (SIGCONT) once the debugger
 *                 is done, so ranks it did not attach go on by themselves
 *   -DPRE_MAIN    MPIR_acquired_pre_main: ranks wait at the gate before main
 * Without PARTIAL, a rank started under a debugger waits at MPIR_debug_gate
 * until the debugger opens it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The MPIR interface, as the MPIR process-acquisition document gives it. */
typedef struct {
    char *host_name;
    char *executable_name;
    int pid;
} MPIR_PROCDESC;

#define MPIR_NULL 0
#define MPIR_DEBUG_SPAWNED 1
#define MPIR_DEBUG_ABORTING 2

MPIR_PROCDESC *MPIR_proctable;
int MPIR_proctable_size;
volatile int MPIR_debug_state;
volatile int MPIR_being_debugged;
char *MPIR_debug_abort_string;
volatile int MPIR_debug_gate;
char MPIR_dll_name[256] = "libsdm-example-msgq.so";
#ifndef RANK0
int MPIR_i_am_starter;
#endif
#ifdef PARTIAL
int MPIR_partial_attach_ok;
#endif
#ifdef PRE_MAIN
int MPIR_acquired_pre_main;
#endif

/* The debugger stops here; the empty asm keeps the call from being
 * optimised away. */
__attribute__((noinline)) void *MPIR_Breakpoint(void)
{
    __asm__ volatile("" ::: "memory");
    return NULL;
}

#define GATE_ENV "MPIR_STARTER_GATE"

static void gate(void)
{
    if (!getenv(GATE_ENV))
        return;
#ifdef PARTIAL
    raise(SIGSTOP); /* the starter lets us go */
#else
    while (!MPIR_debug_gate)
        usleep(1000);
#endif
}

#ifdef PRE_MAIN
/* Held before main: the debugger shows main once it has the rank. */
__attribute__((constructor)) static void gate_before_main(void) { gate(); }
#endif

volatile long iterations;

int compute(int rank)
{
    int sum = 0;
    for (int i = 0; i < 1000; i++)
        sum += i * (rank + 1);
    return sum;
}

void compute_forever(void)
{
    for (;;)
        iterations++;
}

static int rank_main(int rank, int size, int hang)
{
    int v = compute(rank);
    if (hang) {
        if (rank == size - 1)
            compute_forever();
        for (;;)
            pause();
    }
    printf("rank %d of %d: %d\n", rank, size, v);
    return 0;
}

struct job {
    int size, hang, after_input;
    const char *abort_message;
    char **hosts; /* per rank */
    char self[4096];
    pid_t *pids;
    int first; /* first rank this process starts: 1 when the starter is rank 0 */
    int spawned;
    pthread_mutex_t mu;
    pthread_cond_t cond;
};

static void spawn(struct job *j)
{
    char host[256];
    gethostname(host, sizeof host);
    if (MPIR_being_debugged)
        setenv(GATE_ENV, "1", 1);
    MPIR_proctable = calloc(j->size, sizeof *MPIR_proctable);
    for (int r = 0; r < j->size; r++) {
        MPIR_proctable[r].host_name = j->hosts[r] ? j->hosts[r] : strdup(host);
        MPIR_proctable[r].executable_name = j->self;
    }
    if (j->first == 1)
        MPIR_proctable[0].pid = getpid();
    for (int r = j->first; r < j->size; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("mpir-starter: fork");
            exit(1);
        }
        if (pid == 0) {
            char rs[16], ss[16];
            snprintf(rs, sizeof rs, "%d", r);
            snprintf(ss, sizeof ss, "%d", j->size);
            execl(j->self, j->self, "--rank", rs, "--size", ss, j->hang ? "--hang" : (char *)NULL,
                  (char *)NULL);
            perror("mpir-starter: exec");
            _exit(127);
        }
        j->pids[r] = pid;
        MPIR_proctable[r].pid = pid;
    }
    MPIR_proctable_size = j->size;
#ifdef PARTIAL
    /* Every rank is held before the debugger is told about them. */
    for (int r = j->first; r < j->size && MPIR_being_debugged; r++) {
        int ws;
        waitpid(j->pids[r], &ws, WUNTRACED);
    }
#endif
    if (j->abort_message) {
        MPIR_debug_abort_string = (char *)j->abort_message;
        MPIR_debug_state = MPIR_DEBUG_ABORTING;
        MPIR_Breakpoint();
        fprintf(stderr, "mpir-starter: aborting: %s\n", j->abort_message);
        for (int r = j->first; r < j->size; r++)
            kill(j->pids[r], SIGKILL);
        exit(1);
    }
    MPIR_debug_state = MPIR_DEBUG_SPAWNED;
    if (MPIR_being_debugged) {
        MPIR_Breakpoint();
#ifdef PARTIAL
        for (int r = j->first; r < j->size; r++)
            kill(j->pids[r], SIGCONT);
#endif
    }
    printf("mpir-starter: started %d ranks\n", j->size);
    fflush(stdout);
}

/* The starter's progress thread spawns the job, as mpirun's does. */
static void *progress(void *arg)
{
    struct job *j = arg;
    spawn(j);
    pthread_mutex_lock(&j->mu);
    j->spawned = 1;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: mpir-starter [-n N] [--hang] [--after-input] [--abort MESSAGE] [--host [RANK=]NAME]...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct job j = {.size = 4, .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    int rank = -1;
    char *host_all = NULL;
    char *host_of[64] = {0};
    int host_rank[64], nhost = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--hang"))
            j.hang = 1;
        else if (!strcmp(a, "--after-input"))
            j.after_input = 1;
        else if (i + 1 >= argc)
            usage();
        else if (!strcmp(a, "-n") || !strcmp(a, "--size"))
            j.size = atoi(argv[++i]);
        else if (!strcmp(a, "--rank"))
            rank = atoi(argv[++i]);
        else if (!strcmp(a, "--abort"))
            j.abort_message = argv[++i];
        else if (!strcmp(a, "--host")) {
            char *v = argv[++i], *eq = strchr(v, '=');
            if (!eq)
                host_all = v;
            else if (nhost < 64) {
                *eq = 0;
                host_rank[nhost] = atoi(v);
                host_of[nhost++] = eq + 1;
            }
        } else
            usage();
    }
    if (j.size < 1)
        usage();
    if (rank >= 0) {
#ifndef PRE_MAIN
        gate();
#endif
        return rank_main(rank, j.size, j.hang);
    }

    ssize_t n = readlink("/proc/self/exe", j.self, sizeof j.self - 1);
    if (n < 0) {
        perror("mpir-starter: /proc/self/exe");
        return 1;
    }
    j.self[n] = 0;
    j.hosts = calloc(j.size, sizeof *j.hosts);
    for (int r = 0; r < j.size; r++)
        j.hosts[r] = host_all;
    for (int k = 0; k < nhost; k++)
        if (host_rank[k] >= 0 && host_rank[k] < j.size)
            j.hosts[host_rank[k]] = host_of[k];
    j.pids = calloc(j.size, sizeof *j.pids);
#ifdef RANK0
    j.first = 1;
#endif

    if (j.after_input) {
        printf("mpir-starter: waiting for a line\n");
        fflush(stdout);
        for (int c = 0; c != '\n' && c != EOF;)
            c = getchar();
    }
    pthread_t t;
    pthread_create(&t, NULL, progress, &j);
    pthread_mutex_lock(&j.mu);
    while (!j.spawned)
        pthread_cond_wait(&j.cond, &j.mu);
    pthread_mutex_unlock(&j.mu);
    pthread_join(t, NULL);

    int status = 0;
    if (j.first == 1)
        status = rank_main(0, j.size, j.hang);
    for (int r = j.first; r < j.size; r++) {
        int ws;
        if (waitpid(j.pids[r], &ws, 0) == j.pids[r] && !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) {
            fprintf(stderr, "mpir-starter: rank %d failed\n", r);
            status = 1;
        }
    }
    return status;
}
