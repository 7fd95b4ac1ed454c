package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/wire"
)

const listenUsage = `usage: sdm listen [flags]

Waits for jobs that ask to be debugged (sdm connect, in a batch script)
and debugs each one that is accepted, one session after another. On a
terminal it shows each request and asks; in scripts, --accept ID,
--accept-all and --reject ID decide without asking. Requests are read from
$SDM_CONNECT_DIR (default ~/.sdm/connect; yours, mode 0700); only your own
are offered, and those of processes gone from this host are deleted.

examples:
  sdm listen                                                  # ask about each job
  sdm listen --accept-all --max 1 -e 'break pass' -e run -e wait -e stacks
  sdm listen --accept 3f9c01ab --batch cmds.txt
  sdm listen --reject 3f9c01ab --reason 'not now'
  sdm listen --accept 3f9c01ab -e 'listen on' -e 'listen wait 2' -e '[all] stacks'
  sdm requests                                                # what waits

Inside a session, "listen on" takes on every job that asks while you
debug: each joins the session with the next ranks, as the rank set jobN
("[job2] break pass", "[all] stacks"); "listen wait N" waits until the
session holds N jobs; "listen off" stops. Every job ends with the session.
A job runs where its batch system placed it, so restart cannot start it
again from here: submit it again.

Each accepted job connects back here (to this machine's host name, or
--client-host, on a port chosen for it; to 127.0.0.1 for a job on this
machine); the session key goes to it in its answer file, never on a command
line. The commands (-e, --batch, or the terminal) run on every job that is
accepted.

` + dlopenUsage + `

Exit status: 0 when every session went well; 1 when one failed, or no
request came within --wait; 2 on bad usage.

flags:
%s`

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
	dl, err := f.dlopen()
	if err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{*accept != "", *acceptAll, *reject != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return &exitError{2, errors.New("sdm listen: --accept, --accept-all and --reject go alone")}
	}
	ask := modes == 0
	if ask && !isTerminal(os.Stdin) {
		return &exitError{2, errors.New("sdm listen: not on a terminal, so nobody can be asked: give --accept ID, --accept-all or --reject ID")}
	}
	if *accept != "" && *max == 0 {
		*max = 1
	}
	dir, err := connect.Dir()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer stop()
	l := &listener{dir: dir, flags: f, dl: dl, clientHost: *clientHost, seen: map[string]bool{}}
	if *wait > 0 {
		l.deadline = time.Now().Add(*wait)
	}
	in := bufio.NewReader(os.Stdin)
	var failed error
	for sessions := 0; *max == 0 || sessions < *max; {
		reqs, err := l.next(ctx)
		if err != nil {
			return errors.Join(failed, err)
		}
		for _, r := range reqs {
			switch {
			case *reject != "":
				if !matches(r.ID, *reject) {
					continue
				}
				if err := connect.Reply(dir, r, connect.Answer{Reason: *reason}); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "sdm: rejected %s\n", r)
				return nil
			case *accept != "" && !matches(r.ID, *accept):
				continue
			case ask:
				yes, why, err := askUser(in, r)
				if err != nil {
					return errors.Join(failed, err)
				}
				if !yes {
					if err := connect.Reply(dir, r, connect.Answer{Reason: why}); err != nil {
						fmt.Fprintln(os.Stderr, "sdm:", err)
					}
					continue
				}
			}
			sessions++
			if err := l.debug(ctx, r); err != nil {
				fmt.Fprintf(os.Stderr, "sdm: request %s: %v\n", r.ID, err)
				failed = &exitError{1, errors.New("some sessions failed (above)")}
			}
			if *max != 0 && sessions >= *max {
				break
			}
		}
	}
	return failed
}

// matches says whether id is the request named by want (its start will do).
func matches(id, want string) bool { return strings.HasPrefix(id, want) }

// askUser shows a request and asks whether to debug it.
func askUser(in *bufio.Reader, r *connect.Request) (yes bool, reason string, err error) {
	fmt.Fprintf(os.Stderr, "sdm: a job asks to be debugged:\n  %s\naccept? [y/n] ", r)
	line, err := in.ReadString('\n')
	if err != nil {
		return false, "", fmt.Errorf("no answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, "", nil
	}
	host, _ := os.Hostname()
	return false, "rejected at " + host, nil
}

// listener is sdm listen's state between sessions.
type listener struct {
	dir        string
	flags      *sessionFlags
	dl         dlopen.Setting
	clientHost string
	deadline   time.Time
	seen       map[string]bool // requests offered, and bad files reported
}

// next waits for requests not offered yet.
func (l *listener) next(ctx context.Context) ([]*connect.Request, error) {
	if !l.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, l.deadline)
		defer cancel()
	}
	reqs, err := connect.WaitRequests(ctx, l.dir, l.seen, func(err error) {
		fmt.Fprintln(os.Stderr, "sdm: skipped:", err)
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no request came in %s", l.dir)
		}
		return nil, err
	}
	for _, r := range reqs {
		l.seen[r.ID] = true
	}
	return reqs, nil
}

// debug accepts r and runs the session's commands on its job, and on the
// jobs taken on meanwhile with listen on.
func (l *listener) debug(ctx context.Context, r *connect.Request) error {
	s, attached, err := l.take(ctx, r)
	if err != nil {
		return err
	}
	// Requests passed over before (not the one asked for) are offered
	// again to listen on, which takes every job.
	t := &taking{l: l, joined: client.NewJoined(), sessions: []*launcher.Session{s}, added: make(chan struct{}),
		seen: map[string]bool{r.ID: true}}
	t.joined.Add(s.Session)
	t.ctx = ctx
	opts := console.Options{Jobs: t}
	return runSession(ctx, session{tree: t.joined, end: t.end, restart: t}, l.flags, opts, func(con *console.Console) error {
		t.con = con
		if attached != nil {
			con.PrintAnswers(wire.OpAttach, attached)
		}
		return nil
	})
}

// take accepts r and brings its job up: every rank joined, and the
// program loaded in each, or, for a job acquired through MPIR, every rank
// attached (the answers are returned, to print).
func (l *listener) take(ctx context.Context, r *connect.Request) (*launcher.Session, []wire.Group, error) {
	f := l.flags
	o := launcher.Options{Log: log.New(os.Stderr, "sdm: ", 0)}
	p, err := launcher.Await(r.Host, l.clientHost, o)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	answer := connect.Answer{Accept: true, Address: p.Address, Key: p.Key.String(), Fanout: *f.fanout, Debug: *f.verbose}
	if err := connect.Reply(l.dir, r, answer); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "sdm: accepted %s\n", r)
	progress := newProgress(isTerminal(os.Stderr))
	waitCtx, cancel := context.WithTimeout(ctx, *f.connect)
	defer cancel()
	s, err := p.Accept(waitCtx, func(ctx context.Context) error { return connect.WaitFailed(ctx, l.dir, r) }, progress.show)
	progress.clear()
	if err != nil {
		r.Remove(l.dir)
		return nil, nil, err
	}
	var attached []wire.Group
	if r.Plan.Mode == connect.ModeMPIR {
		if attached, err = l.attach(waitCtx, s, r); err == nil {
			err = applyDlopen(ctx, s, l.dl, *f.timeout)
		}
	} else if err = applyDlopen(ctx, s, l.dl, *f.timeout); err == nil {
		err = startProgram(ctx, s, *f.timeout, r.Plan.Program, r.Dir)
	}
	if err != nil {
		s.End(10 * time.Second)
		return nil, nil, err
	}
	return s, attached, nil
}

// taking is a session of sdm listen: its first job, and those taken on
// while it runs (listen on), each its own rank set.
type taking struct {
	l        *listener
	joined   *client.Joined
	con      *console.Console
	ctx      context.Context // the session's
	seen     map[string]bool // requests taken or tried, and bad files reported
	mu       sync.Mutex
	sessions []*launcher.Session
	added    chan struct{}      // closed and replaced when a job joins
	stop     context.CancelFunc // ends the listening, when on
	stopped  chan struct{}      // closed when it has ended
}

// Wait implements console.Jobs.
func (t *taking) Wait(ctx context.Context, n int) error {
	for {
		t.mu.Lock()
		have, added := len(t.sessions), t.added
		t.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-added:
		case <-ctx.Done():
			return fmt.Errorf("the session holds %d jobs: %w", have, ctx.Err())
		}
	}
}

// Listen implements console.Jobs.
func (t *taking) Listen(on bool) error {
	ctx := t.ctx
	t.mu.Lock()
	stop, stopped := t.stop, t.stopped
	if on && stop == nil {
		ctx, t.stop = context.WithCancel(ctx)
		t.stopped = make(chan struct{})
		go t.loop(ctx, t.stopped)
	}
	if !on {
		t.stop, t.stopped = nil, nil
	}
	t.mu.Unlock()
	if !on && stop != nil {
		stop()
		<-stopped
	}
	return nil
}

// loop accepts every new request until ctx ends, and joins each job to
// the session as the rank set jobN.
func (t *taking) loop(ctx context.Context, stopped chan struct{}) {
	defer close(stopped)
	for {
		reqs, err := connect.WaitRequests(ctx, t.l.dir, t.seen, func(err error) {
			fmt.Fprintln(os.Stderr, "sdm: skipped:", err)
		})
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "sdm: listen:", err)
			}
			return
		}
		for _, r := range reqs {
			if ctx.Err() != nil {
				return
			}
			t.seen[r.ID] = true
			if err := t.add(ctx, r); err != nil {
				fmt.Fprintf(os.Stderr, "sdm: request %s: %v\n", r.ID, err)
			}
		}
	}
}

// add takes on the job of r and joins it to the session.
func (t *taking) add(ctx context.Context, r *connect.Request) error {
	s, attached, err := t.l.take(ctx, r)
	if err != nil {
		return err
	}
	first, err := t.joined.Add(s.Session)
	if err != nil {
		s.End(10 * time.Second)
		return err
	}
	t.mu.Lock()
	n := len(t.sessions) + 1
	firstSize := t.sessions[0].Size()
	t.mu.Unlock()
	if n == 2 {
		t.con.Define("job1", wire.All(firstSize))
	}
	t.con.Define(fmt.Sprintf("job%d", n), wire.Range(first, first+s.Size()-1))
	// Counted once announced, so that listen wait returns with the job's
	// set defined.
	t.mu.Lock()
	t.sessions = append(t.sessions, s)
	close(t.added)
	t.added = make(chan struct{})
	t.mu.Unlock()
	for i := range attached {
		attached[i].Ranks = attached[i].Ranks.Shift(first)
	}
	if attached != nil {
		t.con.PrintAnswers(wire.OpAttach, attached)
	}
	return nil
}

// Launcher implements console.Restarter: run works as gdb's, since the
// jobs of the session cannot be restarted anyway.
func (t *taking) Launcher() string { return "" }

// Restartable implements console.Restarter: a job that connected back
// cannot be started again from here, and the launcher says why.
func (t *taking) Restartable() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[0].Relaunchable()
}

// Restart implements console.Restarter; Restartable always refuses.
func (t *taking) Restart(context.Context) (string, error) { return "", t.Restartable() }

// end stops listening and ends every job of the session.
func (t *taking) end(timeout time.Duration) error {
	t.Listen(false)
	t.mu.Lock()
	sessions := t.sessions
	t.mu.Unlock()
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.End(timeout)
		}()
	}
	wg.Wait()
	t.joined.Close()
	return errors.Join(errs...)
}

// attach has every rank of a job acquired through MPIR on the job side
// attach its process, and tells the job side whether to let the starter go.
func (l *listener) attach(ctx context.Context, s *launcher.Session, r *connect.Request) ([]wire.Group, error) {
	body, err := connect.WaitPost(ctx, l.dir, r, "attach")
	if err != nil {
		return nil, fmt.Errorf("the job side sent no table: %w", err)
	}
	groups, err := s.Command(ctx, wire.All(s.Size()), wire.OpAttach, body, time.Until(deadline(ctx)))
	if err == nil {
		var errs []error
		for _, g := range groups {
			if g.Status != wire.StatusOK {
				errs = append(errs, fmt.Errorf("ranks %v could not attach: %s: %s", g.Ranks, g.Status, g.Body))
			}
		}
		err = errors.Join(errs...)
	}
	verdict := "ok"
	if err != nil {
		verdict = err.Error()
	}
	if perr := connect.Post(l.dir, r, "release", []byte(verdict)); perr != nil && err == nil {
		err = perr
	}
	return groups, err
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

const requestsUsage = `usage: sdm requests [--json]

Lists the jobs that wait in sdm connect for a front end, oldest first: ID,
user@host, batch job, pid, age, directory, command, and how sdm would debug
it. Files in the directory that are not requests are reported and skipped;
requests of processes gone from this host are deleted.

flags:
%s`

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
	reqs, skipped, err := connect.Requests(dir)
	if err != nil {
		return err
	}
	for _, e := range skipped {
		fmt.Fprintln(os.Stderr, "sdm: skipped:", e)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, r := range reqs {
		if *jsonOut {
			enc.Encode(r)
		} else {
			fmt.Println(r)
		}
	}
	if len(reqs) == 0 && !*jsonOut {
		fmt.Fprintln(os.Stderr, "sdm: no requests in", dir)
	}
	return nil
}
