package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// Listener is the front end of reverse connect (sdm listen): it offers
// the requests that wait in the directory of requests, answers them, and
// brings the jobs of those it accepts up, one session after another or
// several in one (Jobs).
type Listener struct {
	Dir        string // the directory of requests (connect.Dir)
	ClientHost string // how jobs on other hosts reach this machine ("": its host name)
	Fanout     int    // tree shape of the jobs' servers
	Debug      bool   // servers trace into the job's log
	// ConnectTimeout bounds how long an accepted job takes to come up;
	// Timeout how long the ranks take to load the program or the dlopen
	// setting.
	ConnectTimeout, Timeout time.Duration
	Dlopen                  dlopen.Setting
	Deadline                time.Time      // Next gives up then; zero: never
	Log                     *log.Logger    // what it accepted and skipped, what ranks warn about
	Progress                func(Progress) // how an accepted job comes up (nil: not shown)
	Settled                 func()         // the job is up or failed: what Progress showed is done
	seen                    map[string]bool
}

func (l *Listener) logger() *log.Logger {
	if l.Log == nil {
		return log.New(io.Discard, "", 0)
	}
	return l.Log
}

// Next waits for requests not offered yet, and offers each once.
func (l *Listener) Next(ctx context.Context) ([]*connect.Request, error) {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if !l.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, l.Deadline)
		defer cancel()
	}
	reqs, err := connect.WaitRequests(ctx, l.Dir, l.seen, func(err error) { l.logger().Print("skipped: ", err) })
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no request came in %s", l.Dir)
		}
		if ctx.Err() != nil {
			// Why the wait ended, not why its last look found nothing new.
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	for _, r := range reqs {
		l.seen[r.ID] = true
	}
	return reqs, nil
}

// Reject answers r with a refusal the job side prints.
func (l *Listener) Reject(r *connect.Request, reason string) error {
	return connect.Reply(l.Dir, r, connect.Answer{Reason: reason})
}

// Take accepts r and brings its job up: every rank joined, and the
// program loaded in each, or, for a job acquired through MPIR, every rank
// attached (the answers are returned, to print).
func (l *Listener) Take(ctx context.Context, r *connect.Request) (*Session, []wire.Group, error) {
	p, err := Await(r.Host, l.ClientHost, Options{Log: l.Log})
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	answer := connect.Answer{Accept: true, Address: p.Address, Key: p.Key.String(), Fanout: l.Fanout, Debug: l.Debug}
	if err := connect.Reply(l.Dir, r, answer); err != nil {
		return nil, nil, err
	}
	l.logger().Printf("accepted %s; it connects to %s", r, p.Address)
	waitCtx, cancel := context.WithTimeout(ctx, l.ConnectTimeout)
	defer cancel()
	s, err := p.Accept(waitCtx, func(ctx context.Context) error { return connect.WaitFailed(ctx, l.Dir, r) }, l.Progress)
	if l.Settled != nil {
		l.Settled()
	}
	if err != nil {
		r.Remove(l.Dir)
		return nil, nil, err
	}
	var attached []wire.Group
	if r.Plan.Mode == connect.ModeMPIR {
		if attached, err = l.attach(waitCtx, s, r); err == nil {
			err = l.setDlopen(ctx, s)
		}
	} else if err = l.setDlopen(ctx, s); err == nil {
		err = s.Load(ctx, r.Plan.Program, nil, r.Dir, false, l.Timeout) // no queues: see Options.Queues
	}
	if err != nil {
		s.End(10 * time.Second)
		return nil, nil, err
	}
	return s, attached, nil
}

func (l *Listener) setDlopen(ctx context.Context, s *Session) error {
	return s.applyDlopen(ctx, l.Dlopen, l.Timeout, l.logger())
}

// attach has every rank of a job acquired through MPIR on the job side
// attach its process, and tells the job side whether to let the starter go.
func (l *Listener) attach(ctx context.Context, s *Session, r *connect.Request) ([]wire.Group, error) {
	body, err := connect.WaitAttach(ctx, l.Dir, r)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	groups, err := s.Command(ctx, wire.All(s.Size()), wire.OpAttach, body, time.Until(deadline))
	if err == nil {
		err = wire.Failures(groups, "attach", nil)
	}
	if perr := connect.PostRelease(l.Dir, r, err); perr != nil && err == nil {
		err = perr
	}
	return groups, err
}
