#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool.h"

static pmix_proc_t me;

/* failed returns -1 with *err saying what failed and PMIx's reason. */
static int failed(char **err, const char *what, pmix_status_t rc)
{
	size_t n = strlen(what) + 128;
	*err = malloc(n);
	snprintf(*err, n, "%s: %s", what, PMIx_Error_string(rc));
	return -1;
}

/* sdm_connect connects to the PMIx server of process server (prterun,
 * mpirun, a prte DVM) as a tool, once: the server of a running job is up,
 * and a process that is none (MPICH's mpiexec, say) is told at once
 * rather than after PMIx's retries, a second each. */
int sdm_connect(pid_t server, char **err)
{
	pmix_info_t *info;
	uint32_t retries = 0;
	PMIX_INFO_CREATE(info, 2);
	PMIX_INFO_LOAD(&info[0], PMIX_SERVER_PIDINFO, &server, PMIX_PID);
	PMIX_INFO_LOAD(&info[1], PMIX_CONNECT_MAX_RETRIES, &retries, PMIX_UINT32);
	pmix_status_t rc = PMIx_tool_init(&me, info, 2);
	PMIX_INFO_FREE(info, 2);
	if (rc != PMIX_SUCCESS)
		return failed(err, "connect to its PMIx server as a tool", rc);
	return 0;
}

void sdm_disconnect(void) { PMIx_tool_finalize(); }

/* find returns the value of key in infos, looking into arrays of infos
 * too: PMIx 5 wraps each query's results in PMIX_QUERY_RESULTS. */
static pmix_value_t *find(pmix_info_t *infos, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (PMIX_CHECK_KEY(&infos[i], key))
			return &infos[i].value;
		pmix_value_t *v = &infos[i].value;
		if (v->type == PMIX_DATA_ARRAY && v->data.darray != NULL && v->data.darray->type == PMIX_INFO) {
			pmix_value_t *in = find(v->data.darray->array, v->data.darray->size, key);
			if (in != NULL)
				return in;
		}
	}
	return NULL;
}

/* query asks the server for key (qualified by nspace when not NULL). */
static int query(const char *key, const char *nspace, pmix_info_t **res, size_t *nres, char **err)
{
	pmix_query_t *q;
	pmix_status_t rc;
	PMIX_QUERY_CREATE(q, 1);
	PMIX_ARGV_APPEND(rc, q[0].keys, key);
	if (nspace != NULL) {
		PMIX_QUERY_QUALIFIERS_CREATE(&q[0], 1);
		PMIX_INFO_LOAD(&q[0].qualifiers[0], PMIX_NSPACE, nspace, PMIX_STRING);
	}
	rc = PMIx_Query_info(q, 1, res, nres);
	PMIX_QUERY_FREE(q, 1);
	if (rc != PMIX_SUCCESS) {
		char what[512];
		snprintf(what, sizeof what, "query %s%s%s", key, nspace ? " of " : "", nspace ? nspace : "");
		return failed(err, what, rc);
	}
	return 0;
}

static int query_string(const char *key, char **out, char **err)
{
	pmix_info_t *res = NULL;
	size_t nres = 0;
	if (query(key, NULL, &res, &nres, err) != 0)
		return -1;
	pmix_value_t *v = find(res, nres, key);
	*out = strdup(v != NULL && v->type == PMIX_STRING && v->data.string != NULL ? v->data.string : "");
	PMIX_INFO_FREE(res, nres);
	return 0;
}

/* sdm_namespaces lists the server's namespaces, comma-separated. */
int sdm_namespaces(char **list, char **err) { return query_string(PMIX_QUERY_NAMESPACES, list, err); }

/* sdm_debug_support lists the debugging attributes the server offers. */
int sdm_debug_support(char **list, char **err) { return query_string(PMIX_QUERY_DEBUG_SUPPORT, list, err); }

/* sdm_proctable reads the process table of namespace nspace. */
int sdm_proctable(const char *nspace, sdm_proc **procs, size_t *n, char **err)
{
	pmix_info_t *res = NULL;
	size_t nres = 0;
	if (query(PMIX_QUERY_PROC_TABLE, nspace, &res, &nres, err) != 0)
		return -1;
	pmix_value_t *v = find(res, nres, PMIX_QUERY_PROC_TABLE);
	if (v == NULL || v->type != PMIX_DATA_ARRAY || v->data.darray == NULL || v->data.darray->type != PMIX_PROC_INFO) {
		PMIX_INFO_FREE(res, nres);
		*err = strdup("the server's answer holds no process table");
		return -1;
	}
	pmix_proc_info_t *in = v->data.darray->array;
	*n = v->data.darray->size;
	*procs = calloc(*n ? *n : 1, sizeof **procs);
	for (size_t i = 0; i < *n; i++) {
		(*procs)[i].rank = (int)in[i].proc.rank;
		(*procs)[i].host = strdup(in[i].hostname ? in[i].hostname : "");
		(*procs)[i].exe = strdup(in[i].executable_name ? in[i].executable_name : "");
		(*procs)[i].pid = in[i].pid;
	}
	PMIX_INFO_FREE(res, nres);
	return 0;
}
