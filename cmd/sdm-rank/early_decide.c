//go:build cgo

// What the start in C (early.c) reads: the arguments, the environment,
// the routing file and the key file, each as sdm-rank's Go does, or not
// at all.

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "early.h"

// As package routing has them.
#define MAX_SIZE (1 << 24)
#define MAX_HOST 255

// flagKinds of plan.go.
static const struct {
	const char *name;
	char kind;
} flags[] = {
	{"debugger", 's'}, {"gdb", 's'}, {"debugger_path", 's'}, {"members", 's'}, {"ranks-per-gdb", 'i'}, {"tree", 's'},
	{"routes_from", 's'}, {"routing_file", 's'}, {"key-file", 's'}, {"server", 'i'},
	{"fanout", 'i'}, {"timeout", 'd'}, {"master", 'b'}, {"proxy", 's'}, {"host", 's'},
	{"listen", 's'}, {"port", 'i'}, {"port_base", 'i'}, {"event_window", 'd'}, {"prepare", 's'},
};
enum { NFLAGS = sizeof flags / sizeof flags[0] };

// IndexEnv of package routing.
static const char *const index_env[] = {
	"OMPI_COMM_WORLD_RANK", "OMPI_MCA_orte_ess_vpid", "OMPI_MCA_ns_nds_vpid", "PMI_RANK",
	"PMIX_RANK", "MP_CHILD", "PCMP_PTP_RANK", "SLURM_PROCID", "X10_PLACE",
};

// digits reads s[0:n] as ASCII digits alone, as many as an int holds
// without a doubt.
static int digits(const char *s, size_t n, long long *v) {
	if (n == 0 || n > 9)
		return 0;
	long long x = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 1;
}

// decimal reads an integer flag: a minus sign or none, then digits
// without a leading zero (pflag reads 010 as octal, and 0x10 too; those
// are Go's to read).
static int decimal(const char *s, long long *v) {
	int minus = *s == '-';
	s += minus;
	if (s[0] == '0' && s[1] != '\0')
		return 0;
	if (!digits(s, strlen(s), v))
		return 0;
	if (minus)
		*v = -*v;
	return 1;
}

// millis reads a duration made of whole numbers of ms, s, m and h
// ("60s", "1m30s"), longer than none; fractions, signs and finer units
// are Go's to read.
static int millis(const char *s, long long *ms) {
	long long total = 0;
	while (*s != '\0') {
		size_t n = strspn(s, "0123456789");
		long long v;
		if (!digits(s, n, &v))
			return 0;
		s += n;
		if (strncmp(s, "ms", 2) == 0)
			s += 2;
		else if (*s == 's')
			v *= 1000, s++;
		else if (*s == 'm')
			v *= 60000, s++;
		else if (*s == 'h')
			v *= 3600000, s++;
		else
			return 0;
		total += v;
	}
	if (total <= 0)
		return 0;
	*ms = total;
	return 1;
}

// boolean reads a boolean as strconv.ParseBool does.
static int boolean(const char *s, int *b) {
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcmp(s, yes[i]) == 0)
			return *b = 1, 1;
		if (strcmp(s, no[i]) == 0)
			return *b = 0, 1;
	}
	return 0;
}

static int valid(char kind, const char *v) {
	long long x;
	int b;
	switch (kind) {
	case 'i':
		return decimal(v, &x);
	case 'd':
		return millis(v, &x);
	case 'b':
		return boolean(v, &b);
	}
	return 1;
}

// scan reads the arguments as plan.go's scan does, into value.
static int scan(int argc, char **argv, const char *value[NFLAGS]) {
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "--", 2) != 0)
			return 0;
		const char *name = a + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		int f = -1;
		for (int k = 0; k < NFLAGS; k++)
			if (strlen(flags[k].name) == len && strncmp(flags[k].name, name, len) == 0)
				f = k;
		if (f < 0)
			return 0;
		const char *v;
		if (eq)
			v = eq + 1;
		else if (flags[f].kind == 'b')
			v = "true";
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return 0;
		if (!valid(flags[f].kind, v))
			return 0;
		value[f] = v;
	}
	return 1;
}

static const char *flag(const char *value[NFLAGS], const char *name, const char *def) {
	for (int k = 0; k < NFLAGS; k++)
		if (strcmp(flags[k].name, name) == 0 && value[k])
			return value[k];
	return def;
}

// env looks name up as os.LookupEnv does: its first setting wins.
static const char *env(char **envp, const char *name) {
	size_t n = strlen(name);
	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

static int space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// rank reads the rank from the launcher's variables, as routing.Index
// does; a value with a sign, or bytes other than ASCII, is Go's to read.
static int rank(char **envp, long long *index) {
	for (size_t i = 0; i < sizeof index_env / sizeof index_env[0]; i++) {
		const char *v = env(envp, index_env[i]);
		if (!v)
			continue;
		size_t n = strlen(v);
		for (size_t k = 0; k < n; k++)
			if ((unsigned char)v[k] >= 0x80)
				return 0;
		while (n > 0 && space(v[n - 1]))
			n--;
		while (n > 0 && space(*v))
			v++, n--;
		if (n > 0)
			return digits(v, n, index);
	}
	return 0;
}

static int sep(char c) { return c == ' ' || c == '\t'; }

// field returns the next field of line[*at:end], as routing's nextField.
static const char *field(const char *line, size_t *at, size_t end, size_t *len) {
	while (*at < end && sep(line[*at]))
		(*at)++;
	size_t start = *at;
	while (*at < end && !sep(line[*at]))
		(*at)++;
	*len = *at - start;
	return line + start;
}

static int rest_blank(const char *line, size_t at, size_t end) {
	for (; at < end; at++)
		if (!sep(line[at]))
			return 0;
	return 1;
}

// entry reads entry k's line, s[0:n]: its index must be k, its host
// printable ASCII, its port 1 to 65535.
static int entry(const char *s, size_t n, long long k, const char **host, size_t *hlen) {
	size_t at = 0, ilen, plen;
	const char *idx = field(s, &at, n, &ilen);
	*host = field(s, &at, n, hlen);
	const char *port = field(s, &at, n, &plen);
	long long i, p;
	if (!rest_blank(s, at, n) || !digits(idx, ilen, &i) || i != k || !digits(port, plen, &p) || p < 1 || p > 65535)
		return 0;
	if (*hlen == 0 || *hlen > MAX_HOST)
		return 0;
	for (size_t c = 0; c < *hlen; c++)
		if ((*host)[c] < 0x21 || (*host)[c] > 0x7e)
			return 0;
	return 1;
}

// route reads a routing file as routing.ReadFile would, if it is one of
// entries in order, complete: the servers, and the first server of
// index's host.
static int route(const char *s, size_t size, long long index, int *servers, int *leader) {
	long long n = -1, k = 0;
	const char *host = NULL;
	size_t hlen = 0;
	int blank = 0;
	for (size_t at = 0; at < size;) {
		const char *nl = memchr(s + at, '\n', size - at);
		if (!nl)
			return 0; // a line not written to its end: Go waits
		size_t len = (size_t)(nl - (s + at));
		const char *line = s + at;
		at += len + 1;
		if (len > 0 && line[len - 1] == '\r')
			len--;
		if (rest_blank(line, 0, len)) {
			if (n < 0)
				return 0;
			blank = 1;
			continue;
		}
		if (blank)
			return 0;
		if (n < 0) {
			size_t i = 0, flen;
			const char *f = field(line, &i, len, &flen);
			if (!rest_blank(line, i, len) || !digits(f, flen, &n) || n < 1 || n > MAX_SIZE)
				return 0;
			continue;
		}
		const char *h;
		size_t l;
		if (k == n || !entry(line, len, k, &h, &l))
			return 0;
		if (k == index)
			host = h, hlen = l;
		k++;
	}
	if (n < 0 || k != n || index >= n)
		return 0;
	// The host's first server: the first entry on it.
	const char *line = (const char *)memchr(s, '\n', size) + 1;
	for (k = 0;; k++) {
		size_t len = (size_t)((const char *)memchr(line, '\n', size - (size_t)(line - s)) - line), at = 0, l;
		const char *next = line + len + 1;
		if (len > 0 && line[len - 1] == '\r')
			len--;
		field(line, &at, len, &l);
		const char *h = field(line, &at, len, &l);
		if (l == hlen && memcmp(h, host, l) == 0)
			break;
		line = next;
	}
	*servers = (int)n;
	*leader = (int)k;
	return 1;
}

// slurp reads a regular file of at most max bytes; free the result.
static char *slurp(const char *path, size_t max, size_t *size) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	char *b = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max && (b = malloc(st.st_size + 1))) {
		size_t got = 0;
		for (ssize_t r; got < (size_t)st.st_size; got += r)
			if ((r = read(fd, b + got, st.st_size - got)) <= 0)
				break;
		if (got != (size_t)st.st_size) {
			free(b);
			b = NULL;
		}
		*size = got;
	}
	close(fd);
	return b;
}

int sdm_early_decide(int argc, char **argv, char **envp, struct sdm_plan *p) {
	const char *value[NFLAGS] = {0};
	if (!scan(argc, argv, value))
		return 0;
	if (env(envp, "SDM_SESSION_KEY") || env(envp, "SDM_SESSION_KEY_FD"))
		return 0;
	const char *fd = env(envp, "SDM_LISTEN_FD");
	long long listener = -1;
	if (fd && (!digits(fd, strlen(fd), &listener) || listener < 3))
		return 0;
	int master;
	if (!boolean(flag(value, "master", "false"), &master) || master)
		return 0;
	p->sim = strcmp(flag(value, "debugger", ""), "sim") == 0;
	// The job's plan decided that the servers hand their ranks over
	// (--members=hand, routing.Hands): taken as it is, in a tree of hosts
	// read from the routing file, the only one a member joins.
	p->key_file = flag(value, "key-file", "");
	if (strcmp(flag(value, "members", ""), "hand") != 0 || !*p->key_file ||
	    strcmp(flag(value, "tree", "hosts"), "hosts") != 0 || strcmp(flag(value, "routes_from", "file"), "file") != 0)
		return 0;
	long long fanout, server, index;
	if (!millis(flag(value, "timeout", "60s"), &p->timeout_ms) || !decimal(flag(value, "fanout", "0"), &fanout) ||
	    fanout < 0 || fanout == 1 || !decimal(flag(value, "server", "-1"), &server))
		return 0;
	if (server >= 0)
		index = server;
	else if (server != -1 || !rank(envp, &index))
		return 0;
	size_t size;
	char *file = slurp(flag(value, "routing_file", "routing_file"), 256u << 20, &size);
	if (!file)
		return 0;
	int ok = route(file, size, index, &p->servers, &p->leader);
	free(file);
	if (!ok || p->leader == index)
		return 0; // the first server of its host is sdm-server
	p->index = (int)index;
	p->listener = (int)listener;
	return 1;
}

// private is secret.CheckPrivate.
static int private(const char *path, mode_t forbidden) {
	struct stat st;
	return stat(path, &st) == 0 && (st.st_mode & 0777 & forbidden) == 0 && st.st_uid == geteuid();
}

static int hex(char c) {
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

// sdm_early_key reads a key file as secret.ReadFile does, with its
// checks.
int sdm_early_key(const char *path, unsigned char k[32]) {
	const char *slash = strrchr(path, '/');
	char dir[4096];
	if (!slash)
		strcpy(dir, ".");
	else if (slash == path)
		strcpy(dir, "/");
	else if ((size_t)(slash - path) < sizeof dir && !strstr(path, ".."))
		memcpy(dir, path, slash - path), dir[slash - path] = '\0';
	else
		return 0;
	if (!private(path, 077) || !private(dir, 022))
		return 0;
	size_t n;
	char *text = slurp(path, 4096, &n);
	if (!text)
		return 0;
	const char *s = text;
	while (n > 0 && space(s[n - 1]))
		n--;
	while (n > 0 && space(*s))
		s++, n--;
	int ok = n == 64;
	for (size_t i = 0; ok && i < 32; i++) {
		int hi = hex(s[2 * i]), lo = hex(s[2 * i + 1]);
		ok = hi >= 0 && lo >= 0;
		k[i] = (unsigned char)(hi << 4 | lo);
	}
	free(text);
	return ok;
}

