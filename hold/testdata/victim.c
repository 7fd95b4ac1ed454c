/* victim: a process for the hold tests. It sets a SIGSEGV handler that
 * says so and exits 3, starts a worker thread, says "ready", waits for a
 * line on its standard input, then does what its argument says. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int *nowhere;
static volatile long spins;
static volatile int usr1;
static const char *what = "";

static void handler(int sig)
{
    (void)sig;
    static const char said[] = "handler\n";
    write(1, said, sizeof said - 1);
    _exit(3);
}

static void counted(int sig)
{
    (void)sig;
    usr1++;
}

void fault(void)
{
    *nowhere = 1;                       /* SIGSEGV here */
}

static void *worker(void *arg)
{
    (void)arg;
    if (strcmp(what, "thread-segv") == 0) {
        usleep(50000);
        fault();
    }
    for (;;) {
        spins++;
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    char line[16];
    pthread_t t;

    if (argc > 1)
        what = argv[1];
    signal(SIGSEGV, handler);
    signal(SIGUSR1, counted);
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("ready %d\n", (int)getpid());
    if (!fgets(line, sizeof line, stdin))
        return 9;
    if (strcmp(what, "thread-segv") == 0 || strcmp(what, "spin") == 0) {
        pthread_create(&t, NULL, worker, NULL);
        printf("two threads\n");
    }
    if (strcmp(what, "segv") == 0)
        fault();
    if (strcmp(what, "abort") == 0)
        abort();
    if (strcmp(what, "trap") == 0)
        __asm__ volatile("int3");
    if (strcmp(what, "exit") == 0)
        return atoi(argv[2]);
    if (strcmp(what, "usr1") == 0) {
        for (int k = 1; k <= 5; k++) {
            while (usr1 < k)
                usleep(1000);
            printf("usr1 %d\n", usr1);
        }
        return 0;
    }
    if (strcmp(what, "trap") == 0) {
        printf("after trap\n");
        return 4;
    }
    for (;;) {
        spins++;
        if (spins % 1000000 == 0)
            usleep(1);
    }
}
