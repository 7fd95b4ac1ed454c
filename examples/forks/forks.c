/* forks: a program without MPI whose every rank forks a child that runs
 * a shell command and ends, as a program that calls system() does, then
 * calls joined(). A debugger must leave the child alone and stop the
 * parent at joined(). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int joined(int rank, int status)
{
    return rank * 10 + status;       /* break joined: every rank stops here */
}

int main(void)
{
    const char *r = getenv("SDM_RANK");
    int rank = r ? atoi(r) : 0;
    int status = 0;
    pid_t child = fork();

    if (child == 0) {
        execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
        _exit(127);
    }
    waitpid(child, &status, 0);
    printf("rank %d: child ended with %d\n", rank, WEXITSTATUS(status));
    fflush(stdout);
    return joined(rank, WEXITSTATUS(status)) > 0 ? 0 : 1;
}
