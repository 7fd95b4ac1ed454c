package gdbmi

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// Fault is a fatal signal the rank's process stopped at before this gdb
// attached to it (caught by package hold, which queued the signal again
// in its thread), with the kernel's siginfo of the first delivery.
type Fault struct {
	TID    int
	Signal string // SIGSEGV, …
	Code   int32
	Errno  int32
	Addr   uint64 // the fault's address, or the sender's pid and uid
}

// TakeFault makes the fault gdb's own stop, as if gdb had held the
// process when it happened: the faulting thread alone goes on
// (scheduler-locking), meets its pending signal before anything else
// runs, and stops with it; the signal gets back its first siginfo (a
// queued signal carries tkill's). A continue then delivers it, as gdb's
// continue after a fault does. It runs in the command queue, quietly:
// the fault was told when it happened.
func (b *Backend) TakeFault(ctx context.Context, f Fault) error {
	done := make(chan error, 1)
	call := func(ctx context.Context, _ backend.Ops) ([]byte, error) { return nil, b.takeFault(ctx, f) }
	if !b.queue.Push(job{ctx: ctx, call: call, done: func(_ []byte, err error) { done <- err }}) {
		return ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Backend) takeFault(ctx context.Context, f Fault) error {
	_, run, err := b.session(ctx, wire.OpCont)
	if err != nil {
		return err
	}
	r, _, err := run("-thread-info")
	if err != nil {
		return err
	}
	id := 0
	for _, th := range r.Results.Get("threads").Items() {
		if lwp(th.S("target-id")) == f.TID {
			id = th.Int("id")
		}
	}
	if id == 0 {
		return fmt.Errorf("rank %d: gdb shows no thread %d, which faulted with %s", b.cfg.Rank, f.TID, f.Signal)
	}
	b.setAttaching(true)
	defer b.setAttaching(false)
	for _, cmd := range []string{"-thread-select " + strconv.Itoa(id), "-gdb-set scheduler-locking on"} {
		if _, _, err := run(cmd); err != nil {
			return err
		}
	}
	since := b.reports()
	_, _, err = run("-exec-continue")
	var st wire.State
	if err == nil {
		st, err = b.waitStop(ctx, since)
	}
	if _, _, rerr := run("-gdb-set scheduler-locking replay"); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("rank %d: take the fault (%s in thread %d): %w", b.cfg.Rank, f.Signal, f.TID, err)
	}
	if st.Signal != f.Signal {
		return fmt.Errorf("rank %d: thread %d stopped with %q (%s), not at its fault, %s", b.cfg.Rank, f.TID, st.Signal, st.Reason, f.Signal)
	}
	// The first word of the union is the fault's address, or the
	// sender's pid and uid: either way, these bytes.
	for _, set := range []string{
		fmt.Sprintf("$_siginfo.si_code = %d", f.Code),
		fmt.Sprintf("$_siginfo.si_errno = %d", f.Errno),
		fmt.Sprintf("$_siginfo._sifields._sigfault.si_addr = (void *) %#x", f.Addr),
	} {
		if _, _, err := run("-data-evaluate-expression " + Quote(set)); err != nil {
			return fmt.Errorf("rank %d: give %s its siginfo back: %w", b.cfg.Rank, f.Signal, err)
		}
	}
	return nil
}

// lwp is the kernel's thread id in gdb's name of a thread ("Thread 0x7f…
// (LWP 42)", "LWP 42", "process 42"), or 0.
func lwp(target string) int {
	for _, prefix := range []string{"LWP ", "process "} {
		if i := strings.Index(target, prefix); i >= 0 {
			rest := target[i+len(prefix):]
			end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if end < 0 {
				end = len(rest)
			}
			if n, err := strconv.Atoi(rest[:end]); err == nil {
				return n
			}
		}
	}
	return 0
}
