/* crash: rank 1 dereferences a null pointer; the others keep working.
 * With an argument, rank 1 waits until the file it names exists, so that
 * a debugger can attach to the job before the crash. */
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
    printf("rank %d ready\n", rank);
    fflush(stdout);
    if (rank == 1 % size) {
        while (argc > 1 && access(argv[1], F_OK) != 0)
            usleep(10000);
        fail(rank);
    }
    for (int i = 0; i < 600; i++)    /* a minute of work for the others */
        usleep(100000);
    MPI_Finalize();
    return 0;
}
