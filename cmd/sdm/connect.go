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
)

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
	h, err := launcher.HostRequest(ctx, dir, req, answer, *connectTimeout, log.New(os.Stderr, "sdm connect: ", 0))
	if err != nil {
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

// signalError is a wait ended by a signal.
type signalError struct{ s syscall.Signal }

func (e signalError) Error() string { return e.s.String() }
