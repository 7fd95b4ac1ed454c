// Package openmpi starts debug servers with Open MPI's mpirun. mpirun does
// not say where it will put the ranks before they run, so the servers
// publish their own addresses and the front end helps the launch: it
// writes the routing file from what they published and starts the master.
//
// What enters: an rm.Spec. What leaves: mpirun's command line and the
// started job; the routing file is the front end's to write.
package openmpi

import (
	"os"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// Adapter is the Open MPI adapter.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "openmpi" }

// Launcher implements rm.Adapter: Open MPI's mpirun, under the name
// Debian gives it beside MPICH's.
func (Adapter) Launcher() string { return rm.FindProgram("mpirun.openmpi", "mpirun") }

// Routes implements rm.Adapter.
func (Adapter) Routes() routing.Source { return routing.SourcePublish }

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

// LabelArgs implements rm.Labeller: --tag-output.
func (Adapter) LabelArgs(args []string) []string {
	if rm.HasArg(args, "--tag-output", "-tag-output") {
		return nil
	}
	return []string{"--tag-output"}
}

// Unlabel implements rm.Labeller for mpirun's --tag-output lines,
// "[JOB,RANK]<STREAM>:TEXT".
func (Adapter) Unlabel(line string) (rank int, stream, text string, ok bool) {
	tag, rest, found := strings.Cut(line, "]<")
	if !found || !strings.HasPrefix(tag, "[") {
		return 0, "", "", false
	}
	job, r, found := strings.Cut(tag[1:], ",")
	stream, text, found2 := strings.Cut(rest, ">:")
	rank, err := strconv.Atoi(r)
	if !found || !found2 || !digits(job) || !digits(r) || err != nil || !strings.HasPrefix(stream, "std") {
		return 0, "", "", false
	}
	return rank, stream, text, true
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
