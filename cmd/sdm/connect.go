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
	if d, set, err := launcher.WaitFromEnv(os.Getenv); err != nil {
		return exit.Usage(err)
	} else if set && !fs.Changed("timeout") {
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
	return ask.Serve(ctx)
}
