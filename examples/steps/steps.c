/* steps: a program without MPI whose ranks take N steps of a small
 * computation (1000 without an argument), each through step(), for
 * tracepoints hit many times: the residual each step leaves differs over
 * ranks and shrinks with the step. */
#include <stdio.h>
#include <stdlib.h>

double residual;

double step(int i, int rank)
{
    double r = 1.0 / (1.0 + i + rank % 7);   /* trace here: i, r */
    for (int k = 0; k < 1000; k++)
        r = r * 0.999999 + 1e-9 * k;
    return r;
}

int main(int argc, char **argv)
{
    const char *s = getenv("SDM_RANK");
    int rank = s ? atoi(s) : 0, n = argc > 1 ? atoi(argv[1]) : 1000;

    for (int i = 0; i < n; i++)
        residual = step(i, rank);
    printf("rank %d: %d steps, residual %g\n", rank, n, residual);
    return 0;
}
