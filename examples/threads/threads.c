/* threads: a program whose ranks have three threads each: main starts two
 * workers, waits until both run, then calls ready(), where a breakpoint
 * finds every rank with its workers parked in worker(). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_barrier_t started;

void *worker(void *arg)
{
    pthread_barrier_wait(&started);
    for (;;)
        pause();                     /* parked until the process ends */
    return arg;
}

void ready(int threads)
{
    printf("%d threads ready\n", threads);
    fflush(stdout);
}

int main(void)
{
    pthread_t workers[2];
    pthread_barrier_init(&started, NULL, 3);
    for (int i = 0; i < 2; i++)
        pthread_create(&workers[i], NULL, worker, NULL);
    pthread_barrier_wait(&started);
    ready(3);
    return 0;
}
