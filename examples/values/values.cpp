/* values: a C++ MPI program for printing values as a gdb user expects.
 * Domain::cycle() returns a reference (print domain.cycle() shows the
 * value, not an address); advance() has a struct, an array and a
 * std::vector among its locals, some equal on every rank and some not
 * (half: 4 on the lower half of the ranks, 5 on the upper), returns the
 * same value on every rank (finish), and adds half to a global (watch
 * steps). */
#include <mpi.h>
#include <cstdio>
#include <vector>

typedef int Int_t;

struct Point {
    int x;
    double y;
};

class Domain {
public:
    explicit Domain(Int_t cycle) : m_cycle(cycle) {}
    Int_t &cycle() { return m_cycle; }
private:
    Int_t m_cycle;
};

int steps; /* a global, for watch */

int advance(Domain &domain, const Point &origin, int rank, int size)
{
    int n = 100;
    int half = rank < size / 2 ? 4 : 5;
    int corners[4] = {0, 1, 2, 3};
    std::vector<int> cells(3, n);
    Point moved = {origin.x + 1, origin.y};
    steps += half; /* the locals are set here */
    domain.cycle() += 1;
    return domain.cycle() * 2 + corners[0] + (int)cells.size() - 3 + moved.x - origin.x - 1;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Domain domain(20);
    Point origin = {1, 2.5};
    int result = advance(domain, origin, rank, size);
    int total = 0;
    MPI_Allreduce(&result, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    std::printf("rank %d: cycle %d, result %d, total %d\n", rank, domain.cycle(), result, total);
    MPI_Finalize();
    return 0;
}
