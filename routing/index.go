package routing

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// IndexEnv lists the variables consulted, in order; the first one set wins.
// They are the rank variables of Open MPI (current and older releases),
// MPICH and PMIx, IBM PE, PTP's own launcher, Slurm and X10.
var IndexEnv = []string{"OMPI_COMM_WORLD_RANK", "OMPI_MCA_orte_ess_vpid", "OMPI_MCA_ns_nds_vpid", "PMI_RANK", "PMIX_RANK", "MP_CHILD", "PCMP_PTP_RANK", "SLURM_PROCID", "X10_PLACE"}

// Index returns the rank index: server (from --server=ID, pass -1 when not
// given) wins; else the first set variable of IndexEnv read through lookup
// (os.LookupEnv in production, and when lookup is nil). It also returns
// where the index came from ("--server", or the variable name). No index at
// all is an error naming the variables it looked for; a non-numeric or
// negative value is an error naming the variable and its value.
//
// A variable set to the empty string counts as unset: it carries no rank,
// and job scripts often export such variables unconditionally.
func Index(server int, lookup func(string) (string, bool)) (int, string, error) {
	if server >= 0 {
		return server, "--server", nil
	}
	if server != -1 {
		return -1, "--server", fmt.Errorf("--server=%d: rank index must not be negative", server)
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, name := range IndexEnv {
		raw, ok := lookup(name)
		v := strings.TrimSpace(raw)
		if !ok || v == "" {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil {
			return -1, name, fmt.Errorf("%s=%q is not a rank index", name, raw)
		}
		if i < 0 {
			return -1, name, fmt.Errorf("%s=%q: rank index must not be negative", name, raw)
		}
		return i, name, nil
	}
	return -1, "", fmt.Errorf("no rank index: --server not given and none of %s is set", strings.Join(IndexEnv, ", "))
}
