/* Counts SIGUSR1 and answers each with a byte, so that a sender knows the
   signal arrived before it sends the next (a standard signal sent twice
   while pending arrives once). A thread checks a sum as it runs: a
   register a tracer spoiled would show. SIGUSR2 prints the count and the
   sum's state and exits. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t count;
static volatile int corrupt;

static void on_usr1(int sig) {
	(void)sig;
	count++;
	write(1, "A", 1);
}

static void *sum(void *arg) {
	(void)arg;
	for (;;) {
		unsigned long s = 0;
		for (unsigned long i = 1; i <= 100000; i++)
			s += i;
		if (s != 5000050000UL)
			corrupt = 1;
	}
	return NULL;
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_t t;
	pthread_create(&t, NULL, sum, NULL);
	write(1, "R", 1);
	int sig;
	sigwait(&set, &sig);
	printf("\ncount %d corrupt %d\n", (int)count, corrupt);
	return 0;
}
