package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

const connectUsage = `usage: sdm connect [flags] COMMAND [ARGS...]

Put in front of the command of a batch script, it asks your front end to
debug the job when the job runs, and waits until a front end accepts or
rejects it (sdm listen, or sdm requests to see what waits):

  #!/bin/sh
  #SBATCH -n 4
  sdm connect srun -n 4 ./ring

The request goes into $SDM_CONNECT_DIR (default ~/.sdm/connect, which must be
yours and mode 0700; it is made so when missing). $SDM_CONNECT_TIMEOUT sets
a default --timeout for every sdm connect of a script. On accept, the job
starts here with a debug server beside every rank, and its tree connects to
the front end that accepted: srun, mpirun, mpiexec and poe commands are
run through their resource manager's adapter (the rank count comes from
the command, or from the allocation for srun and poe); with --mpir, the
command runs as it is and its ranks are acquired through MPIR (the starter
waits in MPIR_Breakpoint until the front end has attached them); any other
command is debugged as -n processes on this machine (one by default).

examples:
  sdm connect srun -n 4 --mpi=pmix ./ring
  sdm connect mpirun -np 8 --oversubscribe ./ring
  sdm connect --mpir mpirun -np 8 ./ring                      # mpirun as it is, through MPIR
  sdm connect --timeout 30m ./plain                           # give up after 30 minutes
  sdm connect -n 4 ./plain                                    # 4 processes, no launcher

Exit status: the job's (0 when its launcher exited well); 1 when the request
was rejected (with the front end's reason), timed out, or the job could not
start; 2 on bad usage; 130 and 143 on SIGINT and SIGTERM while waiting, the
request deleted.

flags:
%s`

func runConnect(args []string) error {
	fs := pflag.NewFlagSet("sdm connect", pflag.ContinueOnError)
	fs.SetInterspersed(false) // the command's own flags are its own
	timeout := fs.Duration("timeout", 0, "give up when no front end answered in this time, and delete the request (--timeout 30m; default: $SDM_CONNECT_TIMEOUT, else wait for ever)")
	useMPIR := fs.Bool("mpir", false, "the command is a starter (mpirun, srun, …) started as it is: acquire its ranks through MPIR instead of wrapping them")
	size := fs.IntP("np", "n", 0, "for a command that is not a launcher: how many processes (-n 4; default 1)")
	connectTimeout := fs.Duration("connect-timeout", 60*time.Second, "once accepted, how long the job may take to come up (--connect-timeout 5m)")
	if help, err := parseFlags(fs, args, connectUsage); help || err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &exitError{2, errors.New("sdm connect: no command given (sdm connect [flags] COMMAND [ARGS...])")}
	}
	if env := os.Getenv("SDM_CONNECT_TIMEOUT"); env != "" && !fs.Changed("timeout") {
		d, err := time.ParseDuration(env)
		if err != nil || d < 0 {
			return &exitError{2, fmt.Errorf("SDM_CONNECT_TIMEOUT=%s: want a duration such as 30m", env)}
		}
		*timeout = d
	}
	plan := connect.Plan{Mode: connect.ModeMPIR, Program: fs.Args()}
	if !*useMPIR {
		var err error
		if plan, err = connect.PlanCommand(fs.Args(), *size, os.Getenv); err != nil {
			return &exitError{2, fmt.Errorf("sdm connect: %w", err)}
		}
	} else if *size != 0 {
		return &exitError{2, errors.New("sdm connect: with --mpir, the rank count goes in the starter's command")}
	}
	dir, err := connect.Dir()
	if err != nil {
		return err
	}
	req, err := connect.NewRequest(fs.Args(), plan)
	if err != nil {
		return err
	}
	// Signals are caught before the request exists, so that none can
	// leave it behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		sig := <-sigs
		cancel(signalError{sig.(syscall.Signal)})
	}()
	if err := req.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "sdm connect: request %s waits in %s for a front end (sdm listen --accept %s): %s\n", req.ID, dir, req.ID, plan)
	waitCtx := ctx
	if *timeout > 0 {
		var stop context.CancelFunc
		waitCtx, stop = context.WithTimeout(ctx, *timeout)
		defer stop()
	}
	answer, err := connect.WaitAnswer(waitCtx, dir, req)
	req.Remove(dir)
	var sig signalError
	switch {
	case errors.As(context.Cause(ctx), &sig):
		fmt.Fprintf(os.Stderr, "sdm connect: %v while waiting: request %s deleted\n", sig.s, req.ID)
		return &exitError{128 + int(sig.s), nil}
	case waitCtx.Err() != nil:
		return fmt.Errorf("no front end answered request %s within %v: deleted it", req.ID, *timeout)
	case err != nil:
		return err
	case !answer.Accept:
		return fmt.Errorf("request %s rejected: %s", req.ID, connect.Printable(answer.Reason))
	}
	fmt.Fprintf(os.Stderr, "sdm connect: request %s accepted; the job connects to %s\n", req.ID, answer.Address)
	key, err := wire.ParseKey(answer.Key)
	if err != nil {
		return fmt.Errorf("request %s: the answer's session key: %w", req.ID, err)
	}
	h, err := host(ctx, dir, req, answer, key, *connectTimeout)
	if err != nil {
		connect.Fail(dir, req, err)
		return err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			h.Cancel()
		case <-done:
		}
	}()
	err = h.Wait()
	close(done)
	if errors.As(context.Cause(ctx), &sig) {
		return &exitError{128 + int(sig.s), fmt.Errorf("%v: job cancelled", sig.s)}
	}
	return err
}

// host starts the job of an accepted request here. A starter acquired
// through MPIR is held until the front end says its ranks are attached.
func host(ctx context.Context, dir string, req *connect.Request, a *connect.Answer, key wire.Key, timeout time.Duration) (*launcher.Hosted, error) {
	plan := req.Plan
	cwd, _ := os.Getwd()
	o := launcher.Options{
		RM: plan.RM, Size: plan.Size, Fanout: a.Fanout, Debugger: "gdb-mi",
		Dir: cwd, Launcher: plan.Launcher, LauncherArgs: plan.LauncherArgs,
		ConnectTimeout: timeout, Debug: a.Debug, Log: log.New(os.Stderr, "sdm connect: ", 0),
	}
	if plan.Mode != connect.ModeMPIR {
		o.Program = plan.Program[0]
		return launcher.Host(ctx, o, a.Address, key)
	}
	h, held, err := launcher.HostMPIR(ctx, o, plan.Program, a.Address, key)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*launcher.Hosted, error) {
		held.Kill()
		h.Cancel()
		h.Wait()
		return nil, err
	}
	if err := connect.Post(dir, req, "attach", held.Attach); err != nil {
		return fail(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	verdict, err := connect.WaitPost(waitCtx, dir, req, "release")
	switch {
	case err != nil:
		return fail(fmt.Errorf("the front end did not attach the ranks: %w", err))
	case string(verdict) != "ok":
		return fail(fmt.Errorf("the front end could not attach the ranks: %s", connect.Printable(string(verdict))))
	}
	if err := held.Release(); err != nil {
		return fail(err)
	}
	return h, nil
}

// signalError is a wait ended by a signal.
type signalError struct{ s syscall.Signal }

func (e signalError) Error() string { return e.s.String() }
