package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

func runAttach(args []string) error {
	fs := pflag.NewFlagSet("sdm attach", pflag.ContinueOnError)
	var m launcher.MPIR
	fs.IntVar(&m.Pid, "pid", 0, "the process id of the job's starter with MPIR, such as mpirun or srun (--pid 4242)")
	fs.IntSliceVar(&m.Procs, "pids", nil, "the ranks' processes on this host, in rank order unless their environment tells (--pids 4243,4244)")
	fs.IntVar(&m.Ancestor, "starter", 0, "a starter without MPIR (MPICH's mpiexec): its descendants on this host with a rank variable are the ranks (--starter 4242)")
	ranks := fs.String("ranks", "", "attach only these ranks (--ranks 0-3,7); needs a starter with MPIR_partial_attach_ok")
	fs.BoolVar(&m.Stop, "stop", false, "leave the ranks stopped once attached (default: they go on as they were)")
	gdbStart := addGDBFlag(fs)
	f := addSessionFlags(fs)
	if help, err := parseFlags(fs, args, helpFile("attach")); help || err != nil {
		return err
	}
	front, err := f.ready()
	if err != nil {
		return err
	}
	given := launcher.Given{Pid: fs.Changed("pid"), Procs: fs.Changed("pids"), Ancestor: fs.Changed("starter")}
	if err := m.CheckRunning(given); err != nil {
		return exit.Usage(fmt.Errorf("sdm attach: %w", err))
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("sdm attach: unexpected %q (the job runs already; give its starter's --pid)", fs.Arg(0)))
	}
	if *ranks != "" {
		if m.Ranks, err = wire.ParseRankSet(*ranks); err != nil {
			return exit.Usage(fmt.Errorf("--ranks %s: %w", *ranks, err))
		}
	}
	ctx, cancel := endContext(f)
	defer cancel()
	f.job.Debugger = "gdb-mi"
	if err := parseGDBFlag(&f.job, *gdbStart); err != nil {
		return err
	}
	return outcome(front.Acquire(ctx, f.job, m, nil, false))
}
