// Package openmpi starts debug servers with Open MPI's mpirun. mpirun does
// not say where it will put the ranks before they run, so the servers
// publish their own addresses and the front end helps the launch: it
// writes the routing file from what they published and starts the master.
package openmpi

import (
	"os"
	"strconv"

	"github.com/sdm-hpc/sdm/rm"
)

// Adapter is the Open MPI adapter.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "openmpi" }

// Launcher implements rm.Adapter: Open MPI's mpirun, under the name
// Debian gives it beside MPICH's.
func (Adapter) Launcher() string { return rm.FindProgram("mpirun.openmpi", "mpirun") }

// Routes implements rm.Adapter.
func (Adapter) Routes() string { return "publish" }

// StartsMaster implements rm.Adapter.
func (Adapter) StartsMaster() bool { return false }

// Start implements rm.Adapter: mpirun -np N [args] sdm ….
func (a Adapter) Start(spec rm.Spec) (rm.Job, error) {
	argv, env := a.Command(spec, spec.ServerCommand(a.Routes()))
	spec.Env = env
	return spec.Start(argv)
}

// Command implements rm.Commander: mpirun -np N [args] PROGRAM….
func (a Adapter) Command(spec rm.Spec, program []string) (argv, env []string) {
	argv = []string{spec.Program(a.Launcher())}
	if os.Geteuid() == 0 {
		// mpirun refuses root unless told; whoever runs sdm as root means it.
		argv = append(argv, "--allow-run-as-root")
	}
	argv = append(argv, "-np", strconv.Itoa(spec.Size))
	argv = append(append(argv, spec.LauncherArgs...), program...)
	// The MPIR deprecation banner of Open MPI 4 says nothing to sdm's users.
	return argv, append([]string{"OMPI_MPIR_DO_NOT_WARN=1"}, spec.Env...)
}
