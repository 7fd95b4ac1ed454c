package launcher

import (
	"context"
	"fmt"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/pmix"
)

// pmixTable reads the table of a running starter without MPIR through
// its PMIx server (Open MPI 5's mpirun, PRRTE's prterun). notMPIR is why
// MPIR did not serve: when PMIx does not either, the error says both,
// and what else reaches the ranks.
func (a *acquisition) pmixTable(ctx context.Context, notMPIR error) (tab mpir.Table, err error) {
	helper, err := pmix.Find(a.o.SDM)
	if err == nil {
		if tab, err = pmix.Attach(ctx, helper, a.m.Pid); err == nil {
			return tab, nil
		}
	}
	return tab, fmt.Errorf("%w; nor could sdm reach it as a PMIx tool: %v; on its own host, sdm attach --starter %d takes its ranks from /proc, and a SLURM job's, sdm attach --slurm JOBID", notMPIR, err, a.m.Pid)
}
