package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

const attachUsage = `usage: sdm attach --pid PID [flags]

Takes over a running MPI job through its starter (mpirun, srun, or any
starter with the MPIR interface): reads the starter's table of processes,
starts a debug server beside every rank on the rank's host (ssh for other
hosts) and has its gdb attach to the rank. The job goes on running unless
--stop; halt stops it, detach lets the ranks go on undebugged, and quit
(or the end of the commands) detaches from every rank, so the job runs on
as before. sdm did not start the job, so it cannot start it again: for
restart, start the job under sdm (sdm debug --mpir --starter -- CMD...).

examples:
  sdm attach --pid $(pgrep -n mpirun)                        # interactive
  sdm attach --pid 4242 -e halt -e stacks                     # where is it stuck?
  sdm attach --pid 4242 --ranks 0-3 --stop -e where           # some ranks only (MPIR_partial_attach_ok)
  sdm attach --pid 4242 --json -e halt -e where               # for scripts

` + dlopenUsage + `

Exit status: as sdm debug's: 0 when every command ran and every rank answered
it; 1 on errors from ranks or a failed attach; 2 on a command typed wrong.

flags:
%s`

func runAttach(args []string) error {
	fs := pflag.NewFlagSet("sdm attach", pflag.ContinueOnError)
	pid := fs.Int("pid", 0, "the process id of the job's starter, such as mpirun or srun (--pid 4242)")
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
	if *pid <= 0 {
		return &exitError{2, errors.New("sdm attach: --pid PID of the job's starter is needed")}
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("sdm attach: unexpected %q (the job runs already; give its starter's --pid)", fs.Arg(0))}
	}
	var set wire.RankSet
	if *ranks != "" {
		var err error
		if set, err = wire.ParseRankSet(*ranks); err != nil {
			return &exitError{2, fmt.Errorf("--ranks %s: %w", *ranks, err)}
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer cancel()
	o := launcher.Options{Fanout: *f.fanout, Debugger: "gdb-mi", SSH: *f.sshCommand,
		ConnectTimeout: *f.connect, Debug: *f.verbose, Log: log.New(os.Stderr, "sdm: ", 0)}
	return acquire(ctx, o, launcher.MPIR{Pid: *pid, Ranks: set, Stop: *stop}, f, dl, nil, false)
}

// acquire takes over a job through MPIR and runs the session's commands.
// The libraries loaded when the ranks are attached are all read; dl
// applies to the loads after.
func acquire(ctx context.Context, o launcher.Options, m launcher.MPIR, f *sessionFlags, dl dlopen.Setting, out *starterOutput, sayStarter bool) error {
	progress := newProgress(isTerminal(os.Stderr))
	o.Progress = func(p launcher.Progress) {
		switch {
		case p.Stage == "using" && sayStarter:
			fmt.Fprintln(os.Stderr, "sdm: starting", p.Text)
		case p.Stage == "acquired":
			progress.clear()
			fmt.Fprintln(os.Stderr, "sdm: acquired", p.Text)
		}
		progress.show(p)
	}
	s, acquired, err := launcher.Acquire(ctx, o, m)
	progress.clear()
	if err != nil {
		return err
	}
	return runSession(ctx, launched(s, nil, progress.clear), f, console.Options{Focus: acquired.Ranks}, func(con *console.Console) error {
		if out != nil {
			out.to(con)
		}
		con.PrintAnswers(wire.OpAttach, acquired.Answers)
		return applyDlopen(ctx, s, dl, *f.timeout)
	})
}

// starterOutput passes what a launched starter writes to the console, a
// line at a time; lines written before there is one wait for it.
type starterOutput struct {
	mu      sync.Mutex
	partial []byte
	pending []string
	con     *console.Console
}

func newStarterOutput() *starterOutput { return &starterOutput{} }

func (w *starterOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if w.con != nil {
			w.con.Output(line)
		} else {
			w.pending = append(w.pending, line)
		}
	}
	return len(p), nil
}

// to sends the lines to con from now on, those that waited first.
func (w *starterOutput) to(con *console.Console) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range w.pending {
		con.Output(line)
	}
	w.pending, w.con = nil, con
}
