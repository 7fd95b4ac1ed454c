/* pending: three ranks hung with operations in flight. Rank 0 has a
 * receive posted from rank 1, tag 5, and waits in MPI_Recv from rank 1,
 * tag 7; ranks 1 and 2 share a communicator of their own, where rank 1
 * waits in MPI_Barrier and rank 2 in MPI_Recv from its rank 0 there
 * (world rank 1), tag 9. "pending ring": any number of ranks, each
 * sending the next a message too big to be buffered before it receives
 * from the previous one, a ring of sends that never completes. "pending
 * threads": MPI_THREAD_MULTIPLE, three threads of rank 0 each waiting in
 * MPI_Recv from rank 1 (tags 100, 101, 102), rank 1 in MPI_Barrier.
 * "pending requests": three ranks in waits on requests of every sort:
 * rank 0 on a persistent receive from rank 1 (tag 11) and MPI_Ibarrier,
 * rank 1 on MPI_Ibarrier and a synchronous send to rank 2 (tag 12),
 * rank 2 in a receive from rank 1 (tag 14), with a receive from rank 1
 * (tag 15) posted: MPI-4's MPI_Isendrecv and MPI_Recv_c where the MPI
 * has them; ranks 0 and 1 first exchange messages through persistent
 * requests that complete. */
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *receive(void *tag)
{
    int msg;
    MPI_Recv(&msg, 1, MPI_INT, 1, (int)(long)tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

static void threads(void)
{
    int rank, provided;
    pthread_t t[3];
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (long i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, receive, (void *)(100 + i));
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
}

static void requests(void)
{
    int rank, in[4] = {0}, out[4] = {0};
    MPI_Request req[2];
    MPI_Status st[2]; /* not MPI_STATUSES_IGNORE: GCC takes it for an array of none */
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank < 2) {
        /* Persistent requests that complete, three times over: none of
         * them is left in flight. */
        MPI_Send_init(out, 1, MPI_INT, 1 - rank, 10, MPI_COMM_WORLD, &req[0]);
        MPI_Recv_init(in, 1, MPI_INT, 1 - rank, 10, MPI_COMM_WORLD, &req[1]);
        for (int i = 0; i < 3; i++) {
            int done = 0;
            MPI_Startall(2, req);
            while (!done)
                MPI_Testall(2, req, &done, st);
        }
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
    }
    if (rank == 0) {
        MPI_Recv_init(in, 1, MPI_INT, 1, 11, MPI_COMM_WORLD, &req[0]);
        MPI_Ibarrier(MPI_COMM_WORLD, &req[1]);
        MPI_Startall(1, req);
        MPI_Waitall(2, req, st);
    } else if (rank == 1) {
        MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
        MPI_Issend(out, 2, MPI_INT, 2, 12, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, st);
    } else {
#if MPI_VERSION >= 4
        MPI_Isendrecv(out, 1, MPI_INT, 0, 13, in, 3, MPI_INT, 1, 15, MPI_COMM_WORLD, &req[0]);
        MPI_Recv_c(in, 1, MPI_INT, 1, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#else
        MPI_Irecv(in, 3, MPI_INT, 1, 15, MPI_COMM_WORLD, &req[0]);
        MPI_Recv(in, 1, MPI_INT, 1, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#endif
    }
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    int rank, msg[4];
    MPI_Comm sub;
    MPI_Request req;

    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        threads();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "requests") == 0) {
        requests();
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1 && strcmp(argv[1], "ring") == 0) {
        int size, n = 1 << 16;
        double *big = calloc(n, sizeof(double));
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Send(big, n, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD);
        MPI_Recv(big, n, MPI_DOUBLE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split(MPI_COMM_WORLD, rank > 0, rank, &sub);
    if (rank == 0) {
        MPI_Irecv(msg, 4, MPI_INT, 1, 5, MPI_COMM_WORLD, &req);
        MPI_Recv(msg, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Barrier(sub);
    } else {
        MPI_Recv(msg, 2, MPI_DOUBLE, 0, 9, sub, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
