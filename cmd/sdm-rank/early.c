//go:build cgo

// A member's start before the Go runtime's. Most of a node's rank
// servers only hand their rank to the host's leader and wait; started as
// a Go program, each costs over a millisecond of CPU, most of it the
// runtime's own start, and a node starts hundreds at once on its few
// cores. This constructor runs before the runtime does: it takes the
// starts it is sure are a member's, joins the leader, and waits for the
// leader's first word. If that word is the session's end, the process
// ends without Go ever starting; any other (a debugger to start, the
// leader gone) starts Go on the joined connection (main.go). A start it
// is not sure of, or a join that goes wrong other than by the leader
// never listening, it leaves to Go untouched: decide (plan.go) is the
// authority, and the tests check that every start taken here is one it
// takes, with the same plan.

#define _GNU_SOURCE // struct ucred

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "early.h"

int sdm_early_fd = -1;
int sdm_early_leader = -1;

// As package member has them.
#define MAX_PACKET 4096
#define JOIN_TIMEOUT_MS 5000
#define FIRST_RETRY_MS 2
#define MAX_RETRY_MS 100

// The start runs where the C library hands constructors the arguments
// and the environment, as glibc does; elsewhere sdm-rank starts in Go.
#ifdef __GLIBC__

static long long now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void sleep_ms(long long ms) {
	struct timespec t = {ms / 1000, ms % 1000 * 1000000};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

// duration writes ms as time.Duration's String does.
static void duration(long long ms, char *b, size_t size) {
	char frac[8] = "";
	if (ms < 1000) {
		if (ms == 0)
			snprintf(b, size, "0s");
		else
			snprintf(b, size, "%lldms", ms);
		return;
	}
	if (ms % 1000 != 0) {
		snprintf(frac, sizeof frac, ".%03lld", ms % 1000);
		for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
			frac[n - 1] = '\0';
	}
	long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
	if (h)
		snprintf(b, size, "%lldh%lldm%lld%ss", h, m, s, frac);
	else if (m)
		snprintf(b, size, "%lldm%lld%ss", m, s, frac);
	else
		snprintf(b, size, "%lld%ss", s, frac);
}

// dial connects to the leader's socket, trying again as member.Join
// does until the plan's timeout; a leader that never listens ends the
// start, as Go's would, naming it.
static int dial(const struct sdm_plan *p, const unsigned char k[32]) {
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	sdm_early_address(k, p->leader, sa.sun_path + 1, sizeof sa.sun_path - 1);
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1);
	long long start = now_ms(), wait = FIRST_RETRY_MS;
	for (;;) {
		const char *what = "socket";
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			if (connect(fd, (struct sockaddr *)&sa, len) == 0)
				return fd;
			what = "connect";
		}
		int err = errno;
		if (fd >= 0)
			close(fd);
		long long left = start + p->timeout_ms - now_ms();
		if (left <= wait) {
			char took[32], why[128];
			sleep_ms(left > 0 ? left : 0);
			duration(now_ms() - start, took, sizeof took);
			snprintf(why, sizeof why, "%s", strerror(err));
			if (why[0] >= 'A' && why[0] <= 'Z')
				why[0] += 'a' - 'A';
			fprintf(stderr, "sdm-rank: rank %d: could not reach server %d, this host's first, in %s: %s: %s\n",
				p->index, p->leader, took, what, why);
			_exit(1);
		}
		sleep_ms(wait);
		wait = wait * 2 < MAX_RETRY_MS ? wait * 2 : MAX_RETRY_MS;
	}
}

static unsigned char *uvarint(unsigned char *b, unsigned long long v) {
	for (; v >= 0x80; v >>= 7)
		*b++ = (unsigned char)(v | 0x80);
	*b++ = (unsigned char)v;
	return b;
}

// join says which server this is over fd, and waits for the leader to
// take the rank, as member.Join does; anything else is Go's to tell.
static int join(int fd, const struct sdm_plan *p) {
	struct ucred cred;
	socklen_t clen = sizeof cred;
	struct timeval tv = {JOIN_TIMEOUT_MS / 1000, 0}, none = {0, 0};
	unsigned char pkt[MAX_PACKET], *end = pkt;
	*end++ = 'M';
	end = uvarint(uvarint(end, p->index), p->servers);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != getuid() ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 || send(fd, pkt, end - pkt, MSG_NOSIGNAL) != end - pkt)
		return 0;
	char oob[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {pkt, sizeof pkt};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = oob, .msg_controllen = sizeof oob};
	ssize_t n;
	while ((n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return 0; // no answer within JOIN_TIMEOUT_MS, or none at all
	if (msg.msg_controllen > 0) {
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (int *f = (int *)CMSG_DATA(c); (unsigned char *)f < (unsigned char *)c + c->cmsg_len; f++)
					close(*f);
		return 0;
	}
	return n == 1 && pkt[0] == 'A' && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none) == 0;
}

__attribute__((constructor)) static void early(int argc, char **argv, char **envp) {
	struct sdm_plan p;
	unsigned char k[32];
	if (!sdm_early_decide(argc, argv, envp, &p) || !sdm_early_key(p.key_file, k))
		return;
	int fd = dial(&p, k);
	if (!join(fd, &p)) {
		close(fd);
		return;
	}
	if (p.listener >= 0)
		close(p.listener); // a member never listens; Go unsets its variable
	for (;;) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		unsigned char b[2];
		ssize_t n = recv(fd, b, sizeof b, MSG_PEEK | MSG_TRUNC);
		if (n == 1 && b[0] == 'Q')
			_exit(0); // the session's end: nothing of Go's to run
		break;
	}
	sdm_early_fd = fd;
	sdm_early_leader = p.leader;
}

#endif
