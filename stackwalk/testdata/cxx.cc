// A C++ thread blocked under a template, a method and a lambda.
#include <cstdio>
#include <thread>
#include <unistd.h>
#include <vector>

namespace solver {
template <typename T> struct Grid {
	std::vector<T> cells;
	__attribute__((noinline)) T relax(int n) {
		if (n == 0)
			for (;;)
				pause();
		T r = relax(n - 1) + cells.size();
		asm volatile("" ::: "memory");
		return r;
	}
};
} // namespace solver

int main() {
	solver::Grid<double> g{std::vector<double>(4)};
	std::thread t([&] { g.relax(2); });
	std::printf("ready\n");
	std::fflush(stdout);
	g.relax(1);
	t.join();
}
