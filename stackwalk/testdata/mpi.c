/* An MPI rank that blocks in pause() after MPI_Init. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) static void hold(void) {
	for (;;)
		pause();
}

int main(int argc, char **argv) {
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	printf("ready %d %d\n", rank, (int)getpid());
	fflush(stdout);
	hold();
	MPI_Finalize();
	return 0;
}
