package console

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// ErrInterrupted is returned by a command that ctx ended before it was
// done (a ^C at the terminal); what it left behind has been printed.
var ErrInterrupted = errors.New("interrupted")

// runWait is wait [any] [SECONDS].
func runWait(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	f := strings.Fields(args)
	anyRank := len(f) > 0 && f[0] == "any"
	name := "wait"
	if anyRank {
		f, name = f[1:], "wait any"
	}
	timeout := c.opts.Timeout
	switch len(f) {
	case 0:
	case 1:
		secs, err := strconv.ParseFloat(f[0], 64)
		if err != nil || !(secs > 0 && secs < 1e9) {
			return usageError("wait [any] [SECONDS]: %q is not a number of seconds", f[0])
		}
		timeout = time.Duration(secs * float64(time.Second))
	default:
		return usageError("wait [any] [SECONDS]: %q is more than that", args)
	}
	return c.waitFor(ctx, ranks, timeout, anyRank, name)
}

// outcome is how a wait ended.
type outcome int

const (
	settled     outcome = iota // what it waited for happened
	timedOut                   // its own deadline passed
	interrupted                // its context ended (a ^C)
)

// waitFor blocks until no process of ranks runs (stopped, exited, or
// beyond reach), or with anyRank until one of them does not, and then
// says which still run. Neither the wait's deadline nor a ^C is an error
// that ends a script: both say which ranks still run, so that the next
// command (halt, say) can deal with them. A deadline that passes counts
// as a failure (Failed); a ^C returns ErrInterrupted.
func (c *Console) waitFor(ctx context.Context, ranks wire.RankSet, timeout time.Duration, anyRank bool, command string) error {
	c.hold()
	runs, how, err := c.watch(ctx, ranks, timeout, anyRank)
	c.release()
	after := ctx
	if how == interrupted {
		// The ranks are asked once more, briefly, so that the note is
		// current even when the ^C came before the first answer.
		var cancel context.CancelFunc
		after, cancel = context.WithTimeout(context.WithoutCancel(ctx), afterInterrupt)
		defer cancel()
		if groups, err := c.s.Command(after, ranks, wire.OpStatus, nil, afterInterrupt); err == nil {
			runs = runningOf(groups)
		}
	}
	c.Sync(after) // what arrived meanwhile is shown before the wait's own word
	switch {
	case err != nil:
		return err
	case how == interrupted:
		c.interrupted(command, ranksOf(runs), true)
		return ErrInterrupted
	case how == timedOut:
		c.stillRunning(command, runs, timeout)
	case anyRank:
		c.stillRunning(command, runs, 0)
	}
	return nil
}

// afterInterrupt bounds what a wait still does after a ^C: ask which
// ranks run, and print what arrived.
const afterInterrupt = 2 * time.Second

// watch asks for the status of ranks, and again at each piece of news (a
// stop, an exit, a loss), until the wait is over; it returns the ranks
// that run at that point.
func (c *Console) watch(ctx context.Context, ranks wire.RankSet, timeout time.Duration, anyRank bool) ([]running, outcome, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var runs []running
	for {
		// Taken before asking, so that news arriving in between still wakes us.
		news := c.news()
		groups, err := c.s.Command(ctx, ranks, wire.OpStatus, nil, c.opts.Timeout)
		if err != nil {
			if ctx.Err() != nil {
				return runs, interrupted, nil
			}
			return nil, settled, err
		}
		runs = runningOf(groups)
		set := ranksOf(runs)
		if set.Empty() || anyRank && !set.Equal(ranks) {
			return runs, settled, nil
		}
		select {
		case <-news:
		case <-deadline.C:
			return runs, timedOut, nil
		case <-ctx.Done():
			return runs, interrupted, nil
		}
	}
}

// running is a set of ranks that run doing the same thing: a step from
// one frame, or just running.
type running struct {
	ranks wire.RankSet
	state wire.State
}

// stepping reports whether the ranks run a step, and which.
func (r running) stepping() bool {
	switch r.state.Reason {
	case wire.OpStep, wire.OpNext, wire.OpFinish:
		return true
	}
	return false
}

// runningOf picks the ranks that run out of the answers to status. Ranks
// that run without a step merge whatever else their state says (held at
// a library load, say): to someone waiting they are all still running.
func runningOf(groups []wire.Group) []running {
	var runs []running
	for _, g := range groups {
		var st wire.State
		if g.Status != wire.StatusOK || wire.Decode(g.Body, &st) != nil || st.State != wire.StateRunning {
			continue
		}
		r := running{ranks: g.Ranks, state: st}
		if !r.stepping() {
			r.state = wire.State{State: wire.StateRunning}
		}
		merged := false
		for i := range runs {
			if runs[i].state == r.state {
				runs[i].ranks, merged = runs[i].ranks.Union(r.ranks), true
				break
			}
		}
		if !merged {
			runs = append(runs, r)
		}
	}
	return runs
}

func ranksOf(runs []running) wire.RankSet {
	var set wire.RankSet
	for _, r := range runs {
		set = set.Union(r.ranks)
	}
	return set
}

// sendAndWait runs op, then waits until the ranks where it started
// something have stopped again.
func (c *Console) sendAndWait(ctx context.Context, ranks wire.RankSet, op string, body []byte) error {
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	if err != nil {
		return err
	}
	groups, gones := c.goneOf(ctx, op, groups)
	var started wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			started = started.Union(g.Ranks)
			c.answered(op, g)
		} else {
			c.printReply(op, "", g)
		}
	}
	c.printGone(op, gones)
	if started.Empty() {
		return nil
	}
	return c.waitFor(ctx, started, c.opts.Timeout, false, op)
}

// Interrupt is ^C at the prompt. As gdb's ^C stops the program, it halts
// the ranks of the focus set that run, says so, and waits (up to the
// timeout) until they have stopped, so that their stops print before the
// next prompt. With none running it does nothing. A second ^C (ctx)
// stops the wait, as it stops any command.
func (c *Console) Interrupt(ctx context.Context) error {
	focus := c.focus
	groups, err := c.s.Command(ctx, focus, wire.OpStatus, nil, c.opts.Timeout)
	if err != nil {
		return c.settle(ctx, "halt", focus, err)
	}
	set := ranksOf(runningOf(groups))
	if set.Empty() {
		return nil
	}
	halt, _ := lookup("halt")
	r := c.begin("^C", halt, set, "")
	c.halting(set)
	err = c.sendQuiet(ctx, set, wire.OpHalt, nil)
	if err != nil {
		err = c.settle(ctx, "halt", set, err)
	} else {
		err = c.waitFor(ctx, set, c.opts.Timeout, false, "halt")
	}
	c.end(r, err)
	return err
}

// settle turns a command that ctx ended (a ^C) into a note and
// ErrInterrupted; other outcomes pass.
func (c *Console) settle(ctx context.Context, command string, ranks wire.RankSet, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ErrInterrupted) {
		return err
	}
	c.interrupted(command, ranks, false)
	return ErrInterrupted
}

// news returns a channel closed at the next event that may end a wait.
func (c *Console) news() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// announce wakes the waits after an event that may end them.
func (c *Console) announce(op string) {
	switch op {
	case wire.EventStopped, wire.EventExited, wire.EventLost, wire.EventError:
		c.mu.Lock()
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}
