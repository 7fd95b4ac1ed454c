/* ring: MPI ranks pass a token around a ring a few times. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int pass(int token, int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0) {
        MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
    }
    return token;
}

int main(int argc, char **argv)
{
    int rank, size, token = 0;
    int rounds = argc > 1 ? atoi(argv[1]) : 3;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int round = 0; round < rounds; round++)
        token = pass(token, rank, size);
    if (rank == 0)
        printf("token after %d rounds: %d\n", rounds, token);
    printf("ring of %d ranks done\n", size); /* every rank: merged, it shows that all saw one world */
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
