/* no_cfi is compiled without unwind tables and without a frame pointer:
   nothing says where its caller is. */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline, optimize("omit-frame-pointer"))) void no_cfi(void) {
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(void) {
	no_cfi();
	return 0;
}
