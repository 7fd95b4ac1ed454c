package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

func runListen(args []string) error {
	fs := pflag.NewFlagSet("sdm listen", pflag.ContinueOnError)
	accept := fs.String("accept", "", "accept this request (its ID, or the start of it), debug it, and end (--accept 3f9c01ab)")
	acceptAll := fs.Bool("accept-all", false, "accept every request, one session after another")
	reject := fs.String("reject", "", "reject this request and end (--reject 3f9c01ab)")
	reason := fs.String("reason", "rejected by the front end", "with --reject: the reason the job is told")
	max := fs.Int("max", 0, "end after this many sessions (--max 2; default: 1 with --accept, else no limit)")
	wait := fs.Duration("wait", 0, "give up when no request comes in this time (--wait 10m; default: wait for ever)")
	clientHost := fs.String("client-host", "", "how jobs on other hosts reach this machine (default: this machine's host name)")
	f := addSessionFlags(fs)
	if help, err := parseFlags(fs, args, listenUsage); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("sdm listen: unexpected %q", fs.Arg(0))}
	}
	if (*accept != "" && (*acceptAll || *reject != "")) || (*acceptAll && *reject != "") {
		return &exitError{2, errors.New("sdm listen: --accept, --accept-all and --reject go alone")}
	}
	ask := *accept == "" && !*acceptAll && *reject == ""
	if ask && !isTerminal(os.Stdin) {
		return &exitError{2, errors.New("sdm listen: not on a terminal, so nobody can be asked: give --accept ID, --accept-all or --reject ID")}
	}
	if *accept != "" && *max == 0 {
		*max = 1
	}
	l, err := newListener(f, *clientHost, *wait)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer stop()
	if *reject != "" {
		return l.RejectNamed(ctx, *reject, *reason)
	}
	pick := func(r *connect.Request) (bool, error) { return *accept == "" || launcher.Matches(r.ID, *accept), nil }
	if ask {
		in := bufio.NewReader(os.Stdin)
		pick = func(r *connect.Request) (bool, error) { return askUser(in, l, r) }
	}
	return l.Serve(ctx, *max, pick, func(ctx context.Context, r *connect.Request) error { return debugRequest(ctx, l, f, r) })
}

// newListener is the listener the flags describe.
func newListener(f *sessionFlags, clientHost string, wait time.Duration) (*launcher.Listener, error) {
	dl, err := f.dlopen()
	if err != nil {
		return nil, err
	}
	dir, err := connect.Dir()
	if err != nil {
		return nil, err
	}
	progress := launcher.NewProgressLine(os.Stderr, isTerminal(os.Stderr))
	l := &launcher.Listener{Dir: dir, ClientHost: clientHost, Fanout: *f.fanout, Debug: *f.verbose,
		ConnectTimeout: *f.connect, Timeout: *f.timeout, Dlopen: dl, Log: log.New(os.Stderr, "sdm: ", 0),
		Progress: progress.Show, Settled: progress.Clear}
	if wait > 0 {
		l.Deadline = time.Now().Add(wait)
	}
	return l, nil
}

// askUser shows a request and asks whether to debug it; a no is the job's
// answer.
func askUser(in *bufio.Reader, l *launcher.Listener, r *connect.Request) (bool, error) {
	fmt.Fprintf(os.Stderr, "sdm: a job asks to be debugged:\n  %s\naccept? [y/n] ", r)
	line, err := in.ReadString('\n')
	if err != nil {
		return false, fmt.Errorf("no answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	host, _ := os.Hostname()
	if err := l.Reject(r, "rejected at "+host); err != nil {
		fmt.Fprintln(os.Stderr, "sdm:", err)
	}
	return false, nil
}

// debugRequest accepts r and runs the session's commands on its job, and
// on the jobs taken on meanwhile with listen on.
func debugRequest(ctx context.Context, l *launcher.Listener, f *sessionFlags, r *connect.Request) error {
	s, attached, err := l.Take(ctx, r)
	if err != nil {
		return err
	}
	jobs := l.NewJobs(ctx, s, r)
	opts := console.Options{Jobs: jobs}
	return runSession(ctx, console.Session{Tree: jobs.Tree(), End: jobs.End, Restart: jobs}, f, opts, func(con *console.Console) error {
		jobs.OnJoin = func(sets []launcher.JobSet, attached []wire.Group) {
			for _, set := range sets {
				con.Define(set.Name, set.Ranks)
			}
			if attached != nil {
				con.PrintAnswers(wire.OpAttach, attached)
			}
		}
		if attached != nil {
			con.PrintAnswers(wire.OpAttach, attached)
		}
		return nil
	})
}

func runRequests(args []string) error {
	fs := pflag.NewFlagSet("sdm requests", pflag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "one JSON object per request")
	if help, err := parseFlags(fs, args, requestsUsage); help || err != nil {
		return err
	}
	dir, err := connect.Dir()
	if err != nil {
		return err
	}
	return connect.List(os.Stdout, log.New(os.Stderr, "sdm: ", 0), dir, *jsonOut)
}
