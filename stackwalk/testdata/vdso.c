/* A loop in the vdso: clock_gettime never enters the kernel. */
#include <stdio.h>
#include <time.h>

int main(void) {
	struct timespec ts;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		clock_gettime(CLOCK_MONOTONIC, &ts);
}
