package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

func runAttach(args []string) error {
	fs := pflag.NewFlagSet("sdm attach", pflag.ContinueOnError)
	pid := fs.Int("pid", 0, "the process id of the job's starter with MPIR, such as mpirun or srun (--pid 4242)")
	var pids []int
	fs.IntSliceVar(&pids, "pids", nil, "the ranks' processes on this host, in rank order unless their environment tells (--pids 4243,4244)")
	starterPid := fs.Int("starter", 0, "a starter without MPIR (MPICH's mpiexec): its descendants on this host with a rank variable are the ranks (--starter 4242)")
	ranks := fs.String("ranks", "", "attach only these ranks (--ranks 0-3,7); needs a starter with MPIR_partial_attach_ok")
	stop := fs.Bool("stop", false, "leave the ranks stopped once attached (default: they go on as they were)")
	f := addSessionFlags(fs)
	if help, err := parseFlags(fs, args, attachUsage); help || err != nil {
		return err
	}
	dl, err := f.dlopen()
	if err != nil {
		return err
	}
	m := launcher.MPIR{Pid: *pid, Procs: pids, Ancestor: *starterPid, Stop: *stop}
	given := launcher.Given{Pid: fs.Changed("pid"), Procs: fs.Changed("pids"), Ancestor: fs.Changed("starter")}
	if err := m.CheckRunning(given); err != nil {
		return &exitError{2, fmt.Errorf("sdm attach: %w", err)}
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("sdm attach: unexpected %q (the job runs already; give its starter's --pid)", fs.Arg(0))}
	}
	if *ranks != "" {
		if m.Ranks, err = wire.ParseRankSet(*ranks); err != nil {
			return &exitError{2, fmt.Errorf("--ranks %s: %w", *ranks, err)}
		}
	}
	ctx, cancel := endContext(f)
	defer cancel()
	o := launcher.Options{Fanout: *f.fanout, Debugger: "gdb-mi", SSH: *f.sshCommand,
		ConnectTimeout: *f.connect, Debug: *f.verbose, Log: log.New(os.Stderr, "sdm: ", 0)}
	return acquire(ctx, o, m, f, dl, nil, false)
}

// acquire takes over a job through MPIR and runs the session's commands.
// The libraries loaded when the ranks are attached are all read; dl
// applies to the loads after.
func acquire(ctx context.Context, o launcher.Options, m launcher.MPIR, f *sessionFlags, dl dlopen.Setting, out *launcher.StarterOutput, sayStarter bool) error {
	progress := &launcher.Narrator{ProgressLine: launcher.NewProgressLine(os.Stderr, isTerminal(os.Stderr)), Log: o.Log, Starter: sayStarter}
	o.Progress = progress.Step
	s, acquired, err := launcher.Acquire(ctx, o, m)
	progress.Clear()
	if err != nil {
		return refused(err)
	}
	return runSession(ctx, launched(s, nil, progress.Clear), f, console.Options{Focus: acquired.Ranks}, func(con *console.Console) error {
		if out != nil {
			out.To(con.Output, s.Session)
		}
		con.PrintAnswers(wire.OpAttach, acquired.Answers)
		return applyDlopen(ctx, s, dl, *f.timeout)
	})
}
