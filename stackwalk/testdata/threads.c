/* Threads blocked in pause() under a few levels of calls, for stacks that
   stay the same between two tools' samples. Prints "ready" once every
   thread is about to block. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_barrier_t ready;

__attribute__((noinline)) static void leaf(int n) {
	if (n == 0) {
		for (;;)
			pause();
	}
	leaf(n - 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void middle(int n) { leaf(n); __asm__ volatile(""); }

static void *worker(void *arg) {
	pthread_barrier_wait(&ready);
	middle((int)(long)arg);
	return NULL;
}

int main(void) {
	pthread_t t[2];
	pthread_barrier_init(&ready, NULL, 3);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	pthread_barrier_wait(&ready);
	printf("ready\n");
	fflush(stdout);
	middle(3);
	return 0;
}
