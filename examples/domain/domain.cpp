// domain: a C++ program whose data look like a simulation's (LULESH's
// Domain: vectors of coordinates, a map of names, strings, nested
// structs, an owned object), for editors' views of variables. No MPI:
// each rank (SDM_RANK) fills its own.
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct Point {
    double x, y;
};

class Mesh {
public:
    int cells = 0;
private:
    int spare = -1;
};

struct Domain : Mesh {
    std::vector<double> m_x;
    std::vector<int> m_empty;
    std::map<std::string, int> names;
    std::string title;
    Point corner;
    Point corners[3];
    std::unique_ptr<Point> owned;
};

int advance(Domain &domain, int rank)
{
    domain.cells += rank;
    return domain.cells;                    // the domain is filled here
}

int main()
{
    const char *r = std::getenv("SDM_RANK");
    int rank = r ? std::atoi(r) : 0;
    Domain domain;
    domain.m_x = {1.5, 2.5, 3.5};
    domain.names["x"] = 1;
    domain.names["yy"] = 2;
    domain.title = "lulesh";
    domain.corner = {1, 2};
    domain.corners[2] = {5, 6};
    domain.owned.reset(new Point{7, 8});
    domain.cells = 216;
    return advance(domain, rank) == 216 + rank ? 0 : 1;
}
