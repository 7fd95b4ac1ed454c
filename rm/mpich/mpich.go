// Package mpich starts debug servers with MPICH's mpiexec (Hydra). Like
// mpirun, mpiexec does not say where the ranks go: the servers publish
// their own addresses and the front end helps the launch.
//
// What enters: an rm.Spec. What leaves: mpiexec's command line and the
// started job; the routing file is the front end's to write.
package mpich

import (
	"strconv"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// Adapter is the MPICH adapter.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "mpich" }

// Launcher implements rm.Adapter: Hydra's mpiexec, under the names Debian
// gives it beside Open MPI's.
func (Adapter) Launcher() string {
	return rm.FindProgram("mpiexec.hydra", "mpiexec.mpich", "mpiexec")
}

// Routes implements rm.Adapter.
func (Adapter) Routes() routing.Source { return routing.SourcePublish }

// StartsMaster implements rm.Adapter.
func (Adapter) StartsMaster() bool { return false }

// Start implements rm.Adapter: mpiexec -n N [args] sdm ….
func (a Adapter) Start(spec rm.Spec) (rm.Job, error) {
	argv, _ := a.Command(spec, spec.ServerCommand(a.Routes()))
	return spec.Start(argv)
}

// Command implements rm.Commander: mpiexec -n N [args] PROGRAM….
func (a Adapter) Command(spec rm.Spec, program []string) (argv, env []string) {
	argv = []string{spec.Program(a.Launcher()), "-n", strconv.Itoa(spec.Size)}
	return append(append(argv, spec.LauncherArgs...), program...), spec.Env
}
