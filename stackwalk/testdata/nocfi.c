/* Compiled without unwind tables. Without KEEP_FP, no_cfi keeps no frame
   pointer either: nothing says where its caller is. With KEEP_FP (and
   -fno-omit-frame-pointer) the frame pointer chain does. */
#include <stdio.h>
#include <unistd.h>

#ifdef KEEP_FP
#define FRAME
#else
#define FRAME __attribute__((optimize("omit-frame-pointer")))
#endif

__attribute__((noinline)) FRAME void no_cfi(void) {
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(void) {
	no_cfi();
	return 0;
}
