/* A call inlined twice over: wait_here inside settle inside outer. */
#include <stdio.h>
#include <unistd.h>

static inline __attribute__((always_inline)) void wait_here(void) {
	for (;;)
		pause(); /* line 7 */
}

static inline __attribute__((always_inline)) void settle(void) {
	wait_here(); /* line 11 */
}

__attribute__((noinline)) void outer(void) {
	settle(); /* line 15 */
}

int main(void) {
	printf("ready\n");
	fflush(stdout);
	outer();
	return 0;
}
