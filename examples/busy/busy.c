/* busy: a program without MPI whose ranks wait, as most ranks of a hung
 * job do: every eighth rank (7, 15, …) spins in spin(), the others sleep
 * in nap(), for the seconds given (a minute without an argument). For
 * stack samples of running ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long spins;

void spin(time_t until)
{
    while (time(NULL) < until)
        spins++;
}

void nap(time_t until)
{
    while (time(NULL) < until)
        usleep(100000);
}

int main(int argc, char **argv)
{
    const char *r = getenv("SDM_RANK");
    int rank = r ? atoi(r) : 0;
    time_t until = time(NULL) + (argc > 1 ? atoi(argv[1]) : 60);

    printf("rank %d %s\n", rank, rank % 8 == 7 ? "spinning" : "napping");
    fflush(stdout);
    if (rank % 8 == 7)
        spin(until);
    else
        nap(until);
    return 0;
}
