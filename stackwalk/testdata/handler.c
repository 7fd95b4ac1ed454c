/* A thread that waits inside a signal handler, and one that does not. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void wait_here(void) {
	write(1, "ready\n", 6);
	for (;;)
		pause();
}

static void on_usr2(int sig) { (void)sig; wait_here(); }

__attribute__((noinline)) static void interrupted(void) {
	raise(SIGUSR2);
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg) {
	(void)arg;
	interrupted();
	return NULL;
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	for (;;)
		pause();
}
