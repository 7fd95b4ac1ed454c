/* pingpong: the cost of an MPI call, to measure what interposing on it
 * adds. "pingpong" has ranks 0 and 1 bounce an 8-byte message; "allreduce"
 * has every rank sum 8 bytes. Each of ROUNDS rounds times ITERS calls;
 * the median round's time per call is printed, in ns. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, iters = argc > 2 ? atoi(argv[2]) : 10000, rounds = 21;
    int pingpong = argc > 1 && strcmp(argv[1], "pingpong") == 0;
    double msg = 0, sum, times[64];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (!pingpong)
                MPI_Allreduce(&msg, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else if (rank == 0) {
                MPI_Send(&msg, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&msg, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&msg, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&msg, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            }
        }
        /* A round trip is two calls on each side. */
        if (r >= 0)
            times[r] = (MPI_Wtime() - t0) / iters / (pingpong ? 2 : 1) * 1e9;
    }
    qsort(times, rounds, sizeof times[0], cmp);
    if (rank == 0)
        printf("%.1f\n", times[rounds / 2]);
    MPI_Finalize();
    return 0;
}
