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
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/launcher"
)

func runListen(args []string) error {
	fs := pflag.NewFlagSet("sdm listen", pflag.ContinueOnError)
	accept := fs.String("accept", "", "accept this request (its ID, or the start of it), debug it, and end (--accept 3f9c01ab)")
	acceptAll := fs.Bool("accept-all", false, "accept every request, one session after another")
	reject := fs.String("reject", "", "reject this request and end (--reject 3f9c01ab)")
	reason := fs.String("reason", "rejected by the front end", "with --reject: the reason the job is told")
	max := fs.Int("max", 0, "end after this many sessions (--max 2; default: 1 with --accept or a script, -e or --batch; else no limit, as 0)")
	wait := fs.Duration("wait", 0, "give up when no request comes in this time (--wait 10m; default: wait for ever)")
	clientHost := fs.String("client-host", "", "how jobs on other hosts reach this machine (default: its address on the route toward the job's host)")
	f := launcher.AddSessionFlags(fs)
	if help, err := parseFlags(fs, args, helpFile("listen")); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("sdm listen: unexpected %q", fs.Arg(0)))
	}
	if (*accept != "" && (*acceptAll || *reject != "")) || (*acceptAll && *reject != "") {
		return exit.Usage(errors.New("sdm listen: --accept, --accept-all and --reject go alone"))
	}
	ask := *accept == "" && !*acceptAll && *reject == ""
	if ask && !console.IsTerminal(os.Stdin) {
		return exit.Usage(errors.New("sdm listen: not on a terminal, so nobody can be asked: give --accept ID, --accept-all or --reject ID"))
	}
	if !fs.Changed("max") && (*accept != "" || len(f.Front.Commands.Exprs) > 0 || f.Front.Commands.Batch != "") {
		*max = 1 // the script (or the one job) is the session, and its end sdm's
	}
	front, err := f.Ready()
	if err != nil {
		return err
	}
	dir, err := connect.Dir()
	if err != nil {
		return err
	}
	l := front.Listener(launcher.Listener{Dir: dir, ClientHost: *clientHost, Fanout: f.Job.Fanout, Debug: f.Job.Debug, ConnectTimeout: f.Job.ConnectTimeout})
	if *wait > 0 {
		l.Deadline = time.Now().Add(*wait)
	}
	ctx, stop := exit.Signalled(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer stop()
	if *reject != "" {
		return l.RejectNamed(ctx, *reject, *reason)
	}
	pick := func(r *connect.Request) (bool, error) { return *accept == "" || launcher.Matches(r.ID, *accept), nil }
	if ask {
		pick = l.Asker(os.Stdin, os.Stderr)
	}
	err = front.Serve(ctx, l, *max, pick)
	if sig, ok := exit.Signal(ctx); ok {
		// A session it cut short said how its job ended.
		return exit.Killed(sig, fmt.Errorf("%s: stopped listening", exit.Name(sig)))
	}
	return launcher.Outcome(err)
}

func runRequests(args []string) error {
	fs := pflag.NewFlagSet("sdm requests", pflag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "one JSON object per request")
	if help, err := parseFlags(fs, args, helpFile("requests")); help || err != nil {
		return err
	}
	dir, err := connect.Dir()
	if err != nil {
		return err
	}
	return connect.List(os.Stdout, log.New(os.Stderr, "sdm: ", 0), dir, *jsonOut)
}
