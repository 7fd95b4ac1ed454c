package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
)

func runConnect(args []string) error {
	fs := pflag.NewFlagSet("sdm connect", pflag.ContinueOnError)
	fs.SetInterspersed(false) // the command's own flags are its own
	timeout := fs.Duration("timeout", 0, "give up when no front end answered in this time, and delete the request (--timeout 30m; default: $SDM_CONNECT_TIMEOUT, else wait for ever)")
	useMPIR := fs.Bool("mpir", false, "the command is a starter (mpirun, srun, …) started as it is: acquire its ranks through MPIR instead of wrapping them")
	size := fs.IntP("np", "n", 0, "for a command that is not a launcher: how many processes (-n 4; default 1)")
	connectTimeout := fs.Duration("connect-timeout", 60*time.Second, "once accepted, how long the job may take to come up (--connect-timeout 5m)")
	if help, err := parseFlags(fs, args, helpFile("connect")); help || err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return exit.Usage(errors.New("sdm connect: no command given (sdm connect [flags] COMMAND [ARGS...])"))
	}
	if env := os.Getenv("SDM_CONNECT_TIMEOUT"); env != "" && !fs.Changed("timeout") {
		d, err := time.ParseDuration(env)
		if err != nil || d < 0 {
			return exit.Usage(fmt.Errorf("SDM_CONNECT_TIMEOUT=%s: want a duration such as 30m", env))
		}
		*timeout = d
	}
	plan, err := connect.PlanFor(fs.Args(), *useMPIR, *size, os.Getenv)
	if err != nil {
		return exit.Usage(fmt.Errorf("sdm connect: %w", err))
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
	ctx, stop := exit.Signalled(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ask := launcher.Ask{Dir: dir, Request: req, Wait: *timeout, ConnectTimeout: *connectTimeout, Log: log.New(os.Stderr, "sdm connect: ", 0)}
	accepted, err := ask.Run(ctx)
	sig, signalled := exit.Signal(ctx)
	switch {
	case !signalled:
		return err
	case !accepted:
		fmt.Fprintf(os.Stderr, "sdm connect: %v while waiting: request %s deleted\n", sig, req.ID)
		return exit.Killed(sig, nil)
	}
	return exit.Killed(sig, fmt.Errorf("%v: job cancelled", sig))
}
