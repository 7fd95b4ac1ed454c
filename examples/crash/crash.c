/* crash: rank 1 dereferences a null pointer; the others keep working. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int *pointer;                        /* never set */

void fail(int rank)
{
    *pointer = rank;                 /* SIGSEGV here */
}

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 1 % size)
        fail(rank);
    for (int i = 0; i < 600; i++)    /* a minute of work for the others */
        usleep(100000);
    MPI_Finalize();
    return 0;
}
