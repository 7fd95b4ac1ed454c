package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

func runAttach(args []string) error { return acquireRunning("attach", args, nil) }

// runStacks is STAT's triage in one command: acquire a running job as
// attach does, sample every rank's stacks a few times (whether a rank
// moves tells a hang from slow progress), print the tree, the classes and
// the progress, and let the job go on as it was, without a gdb.
func runStacks(args []string) error {
	return acquireRunning("stacks", args, &console.StacksRequest{Sample: wire.Sample{Count: 3, Interval: console.DefaultInterval}})
}

// acquireRunning takes over a running job (attach), or samples it as r
// asks (stacks).
func acquireRunning(name string, args []string, r *console.StacksRequest) error {
	fs := pflag.NewFlagSet("sdm "+name, pflag.ContinueOnError)
	var m launcher.MPIR
	fs.IntVar(&m.Pid, "pid", 0, "the process id of the job's starter with MPIR, such as mpirun or srun (--pid 4242)")
	fs.IntSliceVar(&m.Procs, "pids", nil, "the ranks' processes on this host, in rank order unless their environment tells (--pids 4243,4244)")
	fs.IntVar(&m.Ancestor, "starter", 0, "a starter without MPIR (MPICH's mpiexec): its descendants on this host with a rank variable are the ranks (--starter 4242)")
	fs.StringVar(&m.Slurm, "slurm", "", "a SLURM job's step by its id, JOBID.STEP or JOBID (its newest running step), from any host with SLURM's commands (--slurm 1234.0)")
	fs.Var(&m.Ranks, "ranks", "only these ranks (--ranks 0-3,7); needs a starter with MPIR_partial_attach_ok")
	fs.BoolVar(&m.ServerPerRank, "server-per-rank", false, "start a debug server beside every rank instead of one per host serving all of the host's ranks")
	fs.BoolVar(&m.Stop, "stop", false, "leave the ranks stopped once attached (default: they go on as they were)")
	f := launcher.AddSessionFlags(fs)
	f.Job.GDB = backend.Lazy
	fs.Var(&f.Job.GDB, "gdb", launcher.GDBUsage)
	if r != nil {
		fs.IntVar(&r.Sample.Count, "samples", r.Sample.Count, "samples of every rank's stacks (--samples 10)")
		fs.DurationVar(&r.Sample.Interval, "interval", r.Sample.Interval, "time between samples (--interval 1s)")
		fs.StringVar(&r.Dot, "dot", "", "write the tree in Graphviz's language to FILE")
		fs.StringVar(&r.SVG, "svg", "", "draw the tree into FILE, an SVG picture (needs Graphviz's dot)")
		fs.BoolVar(&r.Deadlock, "deadlock", false, "then say why the job hangs: the MPI call each rank waits in, the ranks outside MPI the waits lead to, collectives that do not match, and with an Open MPI job's queues (read through its own message-queue library) the cycles of ranks waiting on each other")
		for _, hidden := range []string{"eval", "batch", "exit-status", "dlopen-mode", "dlopen-match", "stop", "gdb"} {
			fs.MarkHidden(hidden)
		}
	}
	if help, err := parseFlags(fs, args, helpFile(name)); help || err != nil {
		return err
	}
	if err := m.CheckRunning(launcher.Given{Pid: fs.Changed("pid"), Procs: fs.Changed("pids"), Ancestor: fs.Changed("starter"), Slurm: fs.Changed("slurm")}); err != nil {
		return exit.Usage(fmt.Errorf("sdm %s: %w", name, err))
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("sdm %s: unexpected %q (the job runs already; give its starter's --pid)", name, fs.Arg(0)))
	}
	f.Job.Debugger = "gdb-mi"
	if r != nil {
		if fs.Changed("eval") || fs.Changed("batch") {
			return exit.Usage(errors.New("sdm stacks runs no other commands: for those, sdm attach -e ..."))
		}
		line, err := r.Line()
		if err != nil {
			return exit.Usage(fmt.Errorf("sdm stacks: %w", err))
		}
		f.Front.Commands.Exprs, f.Job.GDB = []string{line}, backend.Lazy
	}
	front, err := f.Ready()
	if err != nil {
		return err
	}
	ctx, cancel := f.EndContext()
	defer cancel()
	return launcher.Outcome(front.Acquire(ctx, f.Job, m, nil, false))
}
