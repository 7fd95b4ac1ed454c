package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
)

// runStacks is STAT's triage in one command: acquire a running job
// through its starter's MPIR, sample every rank's stacks, print the tree,
// the classes and the progress, and let the job go on as it was.
func runStacks(args []string) error {
	fs := pflag.NewFlagSet("sdm stacks", pflag.ContinueOnError)
	var m launcher.MPIR
	fs.IntVar(&m.Pid, "pid", 0, "the process id of the job's starter with MPIR, such as mpirun or srun (--pid 4242)")
	// A running job is sampled a few times: whether a rank moves between
	// samples tells a hang from slow progress, for a fraction of a second.
	samples := fs.Int("samples", 3, "samples of every rank's stacks (--samples 10)")
	interval := fs.Duration("interval", console.DefaultInterval, "time between samples (--interval 1s)")
	dot := fs.String("dot", "", "write the tree in Graphviz's language to FILE")
	svg := fs.String("svg", "", "draw the tree into FILE, an SVG picture (needs Graphviz's dot)")
	f := addSessionFlags(fs)
	for _, name := range []string{"eval", "batch", "exit-status", "dlopen-mode", "dlopen-match"} {
		fs.MarkHidden(name)
	}
	if help, err := parseFlags(fs, args, helpFile("stacks")); help || err != nil {
		return err
	}
	if fs.Changed("eval") || fs.Changed("batch") {
		return exit.Usage(fmt.Errorf("sdm stacks runs no other commands: for those, sdm attach --pid %d -e ...", m.Pid))
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("sdm stacks: unexpected %q (the job runs already; give its starter's --pid)", fs.Arg(0)))
	}
	if !fs.Changed("pid") {
		return exit.Usage(fmt.Errorf("sdm stacks: --pid PID of the job's starter (mpirun, srun) is needed"))
	}
	if err := m.CheckRunning(launcher.Given{Pid: true}); err != nil {
		return exit.Usage(fmt.Errorf("sdm stacks: %w", err))
	}
	line := stacksLine(*samples, *interval, *dot, *svg)
	if _, err := console.ParseStacks(strings.TrimPrefix(line, "stacks")); err != nil {
		return exit.Usage(fmt.Errorf("sdm stacks: %w", err))
	}
	front, err := f.ready()
	if err != nil {
		return err
	}
	front.Commands.Exprs = []string{line}
	ctx, cancel := endContext(f)
	defer cancel()
	f.job.Debugger, f.job.GDB = "gdb-mi", "lazy"
	return outcome(front.Acquire(ctx, f.job, m, nil, false))
}

// stacksLine is the console's stacks command for the flags.
func stacksLine(samples int, interval time.Duration, dot, svg string) string {
	line := fmt.Sprintf("stacks --samples %d --interval %v", samples, interval)
	if dot != "" {
		line += " --dot " + dot
	}
	if svg != "" {
		line += " --svg " + svg
	}
	return line
}
