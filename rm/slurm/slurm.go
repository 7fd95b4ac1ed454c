// Package slurm starts debug servers with SLURM's srun. SLURM tells every
// task where all the tasks of its step run, so the servers compute the
// routing table themselves (Routes) and the front end needs no part in
// it: it starts the master at once, and the master waits for the routing
// file that the server of rank 0 writes.
package slurm

import (
	"strconv"

	"github.com/sdm-hpc/sdm/rm"
)

// Adapter is the SLURM adapter.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "slurm" }

// Launcher implements rm.Adapter.
func (Adapter) Launcher() string { return rm.FindProgram("srun") }

// Routes implements rm.Adapter.
func (Adapter) Routes() string { return "slurm" }

// StartsMaster implements rm.Adapter.
func (Adapter) StartsMaster() bool { return false }

// Start implements rm.Adapter: srun -n N [args] sdm …. srun ends the step
// when it is told to stop, which is how Cancel reaches the servers on
// other nodes.
func (a Adapter) Start(spec rm.Spec) (rm.Job, error) {
	argv, _ := a.Command(spec, spec.ServerCommand(a.Routes()))
	return spec.Start(argv)
}

// Command implements rm.Commander: srun -n N [args] PROGRAM….
func (a Adapter) Command(spec rm.Spec, program []string) (argv, env []string) {
	argv = []string{spec.Program(a.Launcher()), "-n", strconv.Itoa(spec.Size), "--job-name=sdm"}
	return append(append(argv, spec.LauncherArgs...), program...), spec.Env
}
