package launcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/pmix"
)

// pmixTable reads the table of a running starter without MPIR through
// its PMIx server (Open MPI 5's mpirun, PRRTE's prterun). notMPIR is why
// MPIR did not serve: when PMIx does not either, the error says both,
// and what else reaches the ranks.
func (a *acquisition) pmixTable(ctx context.Context, notMPIR error) (tab mpir.Table, err error) {
	helper, err := pmixHelper(a.o.SDM)
	if err == nil {
		if tab, err = pmix.Attach(ctx, helper, a.m.Pid); err == nil {
			return tab, nil
		}
	}
	return tab, fmt.Errorf("%w; nor could sdm reach it as a PMIx tool: %v; on its own host, sdm attach --starter %d takes its ranks from /proc, and a SLURM job's, sdm attach --slurm JOBID", notMPIR, err, a.m.Pid)
}

// pmixHelper is sdm-pmix beside the sdm executable sdm, as the servers'
// binaries are found, else the one in PATH.
func pmixHelper(sdm string) (string, error) {
	if exe := filepath.Join(filepath.Dir(sdm), pmix.Helper); sdm != "" && executable(exe) == nil {
		return exe, nil
	}
	if exe, err := exec.LookPath(pmix.Helper); err == nil {
		return exe, nil
	}
	return "", errors.New(pmix.Helper + " is not installed (it is built where OpenPMIx's headers are: libpmix-dev)")
}
