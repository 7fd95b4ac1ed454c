package launcher

import (
	"errors"
	"fmt"

	"github.com/sdm-hpc/sdm/rm/slurm"
)

// Given says which of sdm attach's ways to name a running job the user
// took: --pid (MPIR.Pid), --pids (MPIR.Procs), --starter (MPIR.Ancestor),
// --slurm (MPIR.Slurm).
type Given struct{ Pid, Procs, Ancestor, Slurm bool }

// CheckRunning checks that m names a running job in exactly one way, with
// pids that can be pids. Its errors are usage errors, in sdm attach's
// flags.
func (m MPIR) CheckRunning(given Given) error {
	n := 0
	for _, set := range []bool{given.Pid, given.Procs, given.Ancestor, given.Slurm} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("--pid PID of the job's starter is needed (or --pids P1,P2,... of its ranks, --starter PID for a starter without MPIR, --slurm JOBID[.STEP] for a SLURM job)")
	case n > 1:
		return errors.New("--pid, --pids, --starter and --slurm are exclusive: give one")
	case given.Pid && m.Pid <= 0, given.Ancestor && m.Ancestor <= 0:
		return errors.New("a pid is a positive number")
	case given.Slurm:
		if _, _, err := slurm.ParseStepID(m.Slurm); err != nil {
			return err
		}
	case given.Procs && len(m.Procs) == 0:
		return errors.New("--pids needs the ranks' pids (--pids 4243,4244)")
	}
	for _, p := range m.Procs {
		if p <= 0 {
			return fmt.Errorf("--pids: %d is not a pid", p)
		}
	}
	return nil
}
