/* Threads that come and go, then an exit: a process that changes under a
   sampler and ends while one samples it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *brief(void *arg) { return arg; }

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < rounds; i++) {
		pthread_t t[4];
		for (int j = 0; j < 4; j++)
			pthread_create(&t[j], NULL, brief, NULL);
		for (int j = 0; j < 4; j++)
			pthread_join(t[j], NULL);
	}
	return 0;
}
