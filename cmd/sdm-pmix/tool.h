/* The PMIx tool calls sdm-pmix makes, in C: OpenPMIx's API is macros and
 * structures that Go cannot use directly. */
#include <sys/types.h>
#include <pmix_tool.h>

/* A rank of the job, as PMIX_QUERY_PROC_TABLE gives it. */
typedef struct {
	int rank;
	char *host, *exe;
	pid_t pid;
} sdm_proc;

int sdm_connect(pid_t server, char **err);
int sdm_namespaces(char **list, char **err);
int sdm_proctable(const char *nspace, sdm_proc **procs, size_t *n, char **err);
int sdm_debug_support(char **list, char **err);
void sdm_disconnect(void);
