package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/dap"
	"github.com/sdm-hpc/sdm/internal/exit"
)

func runDAP(args []string) error {
	fs := pflag.NewFlagSet("sdm dap", pflag.ContinueOnError)
	listen := fs.String("listen", "", "serve clients that connect to this loopback address, one after another, instead of stdin and stdout (--listen 127.0.0.1:4711)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long a request waits for the ranks")
	logFile := fs.String("log", "", "write what the adapter and the launcher complain about to this file (default: standard error)")
	if help, err := parseFlags(fs, args, helpFile("dap")); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("sdm dap takes no arguments (the program comes in the launch request): %q", fs.Args()))
	}
	logTo := os.Stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logTo = f
	}
	opts := dap.Options{Timeout: *timeout, Log: log.New(logTo, "sdm dap: ", log.LstdFlags)}
	ctx, stop := exit.Signalled(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if *listen != "" {
		return dap.Listen(ctx, *listen, opts, func(a net.Addr) { fmt.Fprintf(os.Stderr, "sdm dap: listening at %v\n", a) })
	}
	return dap.Serve(ctx, os.Stdin, os.Stdout, opts)
}
