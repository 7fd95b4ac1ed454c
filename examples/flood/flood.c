/* flood: each rank prints MEGABYTES of numbered lines as fast as it can,
 * to measure and test how output travels. Every line is
 * "rank R line N " padded with dots to LENGTH bytes with its newline, so
 * that the receiver can count lines and bytes and tell whether a line
 * came whole. Usage: flood MEGABYTES [LENGTH] (LENGTH 100 by default; a
 * LENGTH above 4096 is written in pieces, several writes a line). At the
 * end it prints "rank R done N lines" and returns from done(), where a
 * breakpoint catches the ranks after their output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long lines;                          /* lines written so far, for print */

void done(int rank)
{
    printf("rank %d done %ld lines\n", rank, lines);
    fflush(stdout);
}

/* put writes all of p, in pieces of at most 4096 bytes. */
static void put(const char *p, size_t n)
{
    while (n > 0) {
        size_t k = n < 4096 ? n : 4096;
        ssize_t w = write(1, p, k);
        if (w <= 0)
            exit(1);
        p += w;
        n -= (size_t)w;
    }
}

int main(int argc, char **argv)
{
    const char *r = getenv("SDM_RANK");
    int rank = r ? atoi(r) : 0;
    double mb = argc > 1 ? atof(argv[1]) : 1;
    size_t len = argc > 2 ? (size_t)atol(argv[2]) : 100;
    long long total = (long long)(mb * 1000 * 1000);
    char *line;

    if (len < 32)
        len = 32;
    line = malloc(len);
    for (long long sent = 0; sent < total; sent += (long long)len) {
        int head = snprintf(line, len, "rank %d line %ld ", rank, lines);
        memset(line + head, '.', len - head - 1);
        line[len - 1] = '\n';
        put(line, len);
        lines++;
    }
    done(rank);
    return 0;
}
