/* plain: a program without MPI for the local launcher. Each rank learns
 * its rank from SDM_RANK and SDM_SIZE, which sdm sets; every rank but the
 * last goes through compute(), the last through special(), so that a
 * breakpoint on each shows two groups of ranks. An argument makes the
 * ranks sleep that many seconds at the end, for halt and where. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int counter;                         /* a global, for the globals command */
static const char *greeting = "hello";

int compute(int rank, int size)
{
    int value = rank % 2;            /* print value: ranks group by parity */
    counter += value;
    return value * 10 + size;
}

int special(int rank)
{
    int value = rank * 100;          /* only the last rank comes here */
    counter = value;
    return value;
}

void rest(int seconds)
{
    for (int i = 0; i < seconds * 10; i++)
        usleep(100000);
}

int main(int argc, char **argv)
{
    const char *r = getenv("SDM_RANK"), *s = getenv("SDM_SIZE");
    int rank = r ? atoi(r) : 0, size = s ? atoi(s) : 1;
    int result;

    if (rank == size - 1 && size > 1)
        result = special(rank);
    else
        result = compute(rank, size);
    printf("%s from rank %d of %d: %d\n", greeting, rank, size, result);
    fflush(stdout);
    if (argc > 1)
        rest(atoi(argv[1]));
    return 0;
}
