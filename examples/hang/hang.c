/* hang: every rank waits in MPI_Recv for a message from the last rank,
 * which never sends it: it spins in compute() for ever. The classic hang
 * that a merged stack tree shows at a glance. */
#include <mpi.h>
#include <stdio.h>

volatile long iterations;

void compute(void)
{
    for (;;)
        iterations++;                /* the stuck rank never leaves */
}

int main(int argc, char **argv)
{
    int rank, size, msg;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d: %s\n", rank, rank == size - 1 ? "computing" : "waiting");
    fflush(stdout);
    if (rank == size - 1)
        compute();
    else
        MPI_Recv(&msg, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
