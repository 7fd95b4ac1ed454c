// The start of a member before Go's: early.c.

#include <stddef.h>

// sdm_plan is a member's start, as decide (plan.go) makes it.
struct sdm_plan {
	int index, leader, servers;
	int listener; // the socket the launcher bound, or -1
	int sim;
	long long timeout_ms;
	const char *key_file;
};

// The connection to server sdm_early_leader over which the start in C
// joined, or -1: the Go start serves it from there.
extern int sdm_early_fd, sdm_early_leader;

int sdm_early_decide(int argc, char **argv, char **envp, struct sdm_plan *p);
int sdm_early_key(const char *path, unsigned char k[32]);
void sdm_early_address(const unsigned char key[32], int leader, char *out, size_t size);
