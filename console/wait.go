package console

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// runWait blocks until no process of the set is running: stopped, exited,
// or beyond reach. It asks for the status, then waits for news (a stop, an
// exit, a loss) and asks again, until its deadline.
func runWait(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	timeout := c.opts.Timeout
	if args != "" {
		secs, err := strconv.ParseFloat(args, 64)
		if err != nil || secs <= 0 {
			return usageError("wait [SECONDS]: %q is not a number of seconds", args)
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	return waitStopped(ctx, c, ranks, timeout)
}

func waitStopped(ctx context.Context, c *Console, ranks wire.RankSet, timeout time.Duration) error {
	c.hold()
	defer func() {
		c.release()
		c.Sync(ctx) // what arrived meanwhile is shown before the wait returns
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		// Taken before asking, so that news arriving in between still wakes us.
		news := c.news()
		groups, err := c.s.Command(ctx, ranks, wire.OpStatus, nil, c.opts.Timeout)
		if err != nil {
			return err
		}
		var running wire.RankSet
		for _, g := range groups {
			var st wire.State
			if g.Status == wire.StatusOK && wire.Decode(g.Body, &st) == nil && st.State == wire.StateRunning {
				running = running.Union(g.Ranks)
			}
		}
		if running.Empty() {
			return nil
		}
		select {
		case <-news:
		case <-deadline.C:
			return fmt.Errorf("wait: ranks %v still running after %v", running, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sendAndWait runs op, then waits until the ranks where it started
// something have stopped again.
func (c *Console) sendAndWait(ctx context.Context, ranks wire.RankSet, op string, body []byte) error {
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	if err != nil {
		return err
	}
	var started wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusOK {
			started = started.Union(g.Ranks)
		} else {
			c.printReply(op, "", g)
		}
	}
	if started.Empty() {
		return nil
	}
	return waitStopped(ctx, c, started, c.opts.Timeout)
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
