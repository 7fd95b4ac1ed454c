/* fault: a program without MPI whose rank 1 (SDM_RANK, which sdm sets)
 * dereferences a null pointer in a thread of its own, with a SIGSEGV
 * handler installed, as MPI libraries install one: a debugger must stop
 * it at the fault, before the handler runs. The handler says so and exits
 * with status 3. With an argument, rank 1 waits until the file it names
 * exists. The other ranks sleep a minute. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int *pointer;                        /* never set */
static const char *trigger;

static void handler(int sig)
{
    static const char said[] = "handler ran\n";
    (void)sig;
    write(1, said, sizeof said - 1);
    _exit(3);
}

void fail(int rank)
{
    *pointer = rank;                 /* SIGSEGV here */
}

static void *worker(void *arg)
{
    while (trigger && access(trigger, F_OK) != 0)
        usleep(10000);
    fail(*(int *)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *r = getenv("SDM_RANK");
    int rank = r ? atoi(r) : 0;
    pthread_t t;

    signal(SIGSEGV, handler);
    trigger = argc > 1 ? argv[1] : NULL;
    printf("rank %d ready\n", rank);
    fflush(stdout);
    if (rank == 1)
        pthread_create(&t, NULL, worker, &rank);
    for (int i = 0; i < 600; i++)
        usleep(100000);
    return 0;
}
