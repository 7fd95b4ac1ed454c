package gdbmi

import (
	"context"
	"fmt"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// look runs read, MI commands that read the program's state, for a
// command of op. A rank that runs is looked at in passing, as the lazy
// backend samples one: gdb interrupts it (-exec-interrupt: SIGINT, which
// gdb does not pass on), read looks at its main thread (gdb's thread 1),
// and it goes on; none of it is news: the rank is not told stopped, nor
// running again. A stop that is not the interrupt's (a breakpoint hit
// just then) is the program's own: it is told, read looks at it, and the
// rank stays there; but a pass through a tracepoint is handed to the look
// (pass), which takes the rank there: gdb drops an interrupt that finds
// the rank stopped, and a rank that passes a tracepoint all the time is
// stopped at it almost whenever gdb reads the interrupt.
func (b *Backend) look(ctx context.Context, op string, read func(run func(string) (Record, string, error)) error) error {
	_, run, err := b.session(ctx, op)
	if err != nil {
		return err
	}
	if err := b.settledRunning(ctx); err != nil {
		return err
	}
	b.mu.Lock()
	// A stop already told (its event sent) has its state set first: a
	// look that came just after it must not take the rank for running.
	if err := b.announced(); err != nil {
		b.mu.Unlock()
		return err
	}
	running := b.state.State == wire.StateRunning && !b.held
	// A pass handed to the look ends its wait for the interrupt's stop,
	// which may have been counted already as it came.
	waitCtx, handedOver := context.WithCancelCause(ctx)
	defer handedOver(nil)
	if running {
		b.peeking, b.lookHanded = true, handedOver
	}
	b.mu.Unlock()
	if !running {
		return read(run)
	}
	st, err := b.interrupt(waitCtx, run)
	b.mu.Lock()
	passed := context.Cause(waitCtx) == errHanded
	b.lookHanded = nil
	if passed {
		st, err = b.state, nil
		b.lateInterrupt = time.Now()
	}
	b.mu.Unlock()
	ours := err == nil && st.State == wire.StateStopped && (passed || st.Reason == "signal-received" && st.Signal == "SIGINT")
	switch {
	case ours:
		st, ours, err = b.readAndGoOn(run, read, st)
	case err == nil && st.State == wire.StateStopped:
		err = read(run)
	}
	b.mu.Lock()
	b.peeking = false
	b.mu.Unlock()
	if !ours && (st.State == wire.StateStopped || st.State == wire.StateExited) {
		// The program's own news, which came while it was quiet.
		b.out.Drain()
		news := wire.EventStopped
		if st.State == wire.StateExited {
			news = wire.EventExited
		}
		b.emit(news, wire.MustEncode(st))
	}
	return err
}

// readAndGoOn reads a rank the look stopped (its state st) and lets it go
// on. A stop that came as soon as it went on stands: it is returned, with
// ours false, to be told once the look is over.
func (b *Backend) readAndGoOn(run func(string) (Record, string, error), read func(run func(string) (Record, string, error)) error, st wire.State) (wire.State, bool, error) {
	ours := true
	_, _, err := run("-thread-select 1")
	if err == nil {
		err = read(run)
	}
	// The *running record may come after peeking ends: it is counted
	// as the backend's own, as a library load's continue is.
	b.mu.Lock()
	b.quietRuns++
	since := b.reported
	b.mu.Unlock()
	if _, _, cerr := run("-exec-continue"); cerr != nil {
		b.mu.Lock()
		b.quietRuns--
		b.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("the rank, stopped to be looked at, did not go on: %w", cerr)
		}
	} else {
		// A stop (or end) that came as soon as the rank went on
		// stands, and is news once the look is over.
		b.mu.Lock()
		if b.reported == since {
			b.state, b.held = wire.State{State: wire.StateRunning}, false
			b.report()
		} else {
			st, ours = b.state, false
		}
		b.mu.Unlock()
	}
	return st, ours, err
}

// settledRunning waits, under ctx, while a rank that runs is still being
// started by the backend (its start-up libraries read, at stops of its
// own that an interrupt would race with).
func (b *Backend) settledRunning(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		b.mu.Lock()
		starting := b.state.State == wire.StateRunning && !b.started
		b.mu.Unlock()
		if !starting {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("the rank is still starting (reading its libraries): %w", ctx.Err())
		}
	}
}

// interruptWait bounds the wait for an interrupt's stop before it is
// sent again: gdb drops one that meets a stop of the backend's own (a
// library load), after which the process runs on.
const interruptWait = 500 * time.Millisecond

// interrupt interrupts the running rank and returns the stop that
// follows, under ctx.
func (b *Backend) interrupt(ctx context.Context, run func(string) (Record, string, error)) (wire.State, error) {
	for {
		since := b.reports()
		if _, _, err := run("-exec-interrupt"); err != nil {
			return wire.State{}, err
		}
		wait, cancel := context.WithTimeout(ctx, interruptWait)
		st, err := b.waitStop(wait, since)
		cancel()
		if err == nil || ctx.Err() != nil {
			return st, err
		}
	}
}
