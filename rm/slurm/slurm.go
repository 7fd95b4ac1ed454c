// Package slurm starts debug servers with SLURM's srun. SLURM tells every
// task where all the tasks of its step run, so the servers compute the
// routing table themselves (Routes) and the front end needs no part in
// it: it starts the master at once, and the master waits for the routing
// file that the server of rank 0 writes.
//
// What enters: an rm.Spec, and at each server SLURM's environment. What
// leaves: srun's command line and the started job; at the servers, the
// routing table computed from that environment.
package slurm

import (
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// Adapter is the SLURM adapter.
type Adapter struct{}

// Name implements rm.Adapter.
func (Adapter) Name() string { return "slurm" }

// Launcher implements rm.Adapter.
func (Adapter) Launcher() string { return rm.FindProgram("srun") }

// Routes implements rm.Adapter.
func (Adapter) Routes() routing.Source { return routing.SourceSLURM }

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

// LabelArgs implements rm.Labeller: --label.
func (Adapter) LabelArgs(args []string) []string {
	if rm.HasArg(args, "--label", "-l") {
		return nil
	}
	return []string{"--label"}
}

// Unlabel implements rm.Labeller for srun's --label lines, "RANK: TEXT",
// the rank padded with spaces to the width of the largest. srun passes
// both streams of the tasks as they are, so the stream is "tty".
func (Adapter) Unlabel(line string) (rank int, stream, text string, ok bool) {
	r, text, found := strings.Cut(strings.TrimLeft(line, " "), ": ")
	if !found || r == "" || strings.Trim(r, "0123456789") != "" {
		return 0, "", "", false
	}
	rank, err := strconv.Atoi(r)
	return rank, "tty", text, err == nil
}
