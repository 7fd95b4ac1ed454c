package lazy

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/mpiq"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// native answers the ops a rank needs no gdb for (withoutGDB, status and
// halt), before the hand-over; the others never reach it.
type native struct {
	backend.Unsupported
	b *Backend
}

func (b *Backend) native() native {
	return native{Unsupported: backend.Unsupported{Backend: "lazy, before gdb"}, b: b}
}

var _ backend.Ops = native{}

// Start implements backend.Ops: the program is found and kept, for run
// or for gdb, and what stacks will read of its modules is read ahead.
func (n native) Start(_ context.Context, st wire.Start) (wire.State, error) {
	b := n.b
	st = mpiq.Preload(st)
	path, err := program.Find(st.Program, st.Dir)
	if err != nil {
		return wire.State{}, err
	}
	for _, kv := range st.Env {
		if !containsEq(kv) {
			return wire.State{}, fmt.Errorf("environment entry %q is not NAME=VALUE", kv)
		}
	}
	st.Args, st.Env = append([]string(nil), st.Args...), append([]string(nil), st.Env...)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loaded = &st
	if b.sampler != nil {
		b.sampler.Prepare(path, st.Env)
	}
	if b.proc == nil {
		b.state = wire.State{State: wire.StateNotStarted, Reason: "loaded"}
	}
	return b.state, nil
}

func containsEq(kv string) bool {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return true
		}
	}
	return false
}

// Run implements backend.Ops: a process of the loaded program starts on
// the rank's terminal; one still there from before is killed first, as
// gdb's run does.
func (n native) Run(ctx context.Context) (wire.State, error) {
	b := n.b
	b.mu.Lock()
	loaded, p := b.loaded, b.proc
	b.mu.Unlock()
	if p != nil && p.cmd == nil {
		return n.Continue(ctx) // a process of a running job: run it on
	}
	if loaded == nil {
		return wire.State{}, errors.New("no program loaded (start one first)")
	}
	if p != nil {
		if _, err := n.Kill(ctx); err != nil {
			return wire.State{}, err
		}
	}
	p, err := b.startProcess(*loaded)
	if err != nil {
		return wire.State{}, err
	}
	st := wire.State{State: wire.StateRunning}
	b.mu.Lock()
	if b.proc == p { // a program that ended at once has told its end already
		b.state = st
	}
	b.mu.Unlock()
	return st, nil
}

// Status implements backend.Ops: the state as the backend left it, or
// stopped when a signal from outside (not a halt) put the process in a
// job-control stop meanwhile.
func (n native) Status(ctx context.Context) (wire.State, error) {
	b := n.b
	b.settled(ctx)
	b.mu.Lock()
	st, p := b.state, b.proc
	// A halt's stop is told by its event, which status must not overtake.
	halting := p != nil && p.held
	b.mu.Unlock()
	if p != nil && !halting && st.State == wire.StateRunning {
		if stopped, err := p.h.JobStopped(ctx); err == nil && stopped {
			return wire.State{State: wire.StateStopped, Reason: "signal-received", Signal: "SIGSTOP"}, nil
		}
	}
	return st, nil
}

// Halt implements backend.Ops: every thread of the process is stopped
// and held, without a signal; the stop arrives as an event, with the
// main thread's innermost frame, once every thread has stopped.
func (n native) Halt(ctx context.Context) (wire.State, error) {
	b := n.b
	b.settled(ctx)
	b.mu.Lock()
	st, p := b.state, b.proc
	if p == nil || st.State != wire.StateRunning || p.held {
		b.mu.Unlock()
		return st, nil
	}
	p.held = true
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.halted(context.WithoutCancel(ctx), p)
	}()
	return st, nil
}

// halted holds p and tells of its stop once every thread has stopped.
func (b *Backend) halted(ctx context.Context, p *process) {
	ctx, cancel := context.WithTimeout(ctx, signalWait)
	defer cancel()
	if err := p.h.Hold(ctx); err != nil {
		b.mu.Lock()
		gone := b.proc != p || b.closed
		b.mu.Unlock()
		if !gone {
			b.Send(backend.Event{Op: wire.EventWarning, Body: wire.MustEncode(b.rankErr("halt: %v", err).Error())})
		}
		return
	}
	st := wire.State{State: wire.StateStopped, Reason: "signal-received", Signal: "SIGSTOP"}
	if stack, err := b.stackOf(ctx, p, p.pid); err == nil && len(stack.Frames) > 0 {
		st.Frame = stack.Frames[0]
	}
	b.tell(p, wire.EventStopped, st)
}

// Continue implements backend.Ops: a halted process goes on, one held at
// a fault with its signal delivered (its handler runs, or it ends, as
// after gdb's continue), one in a job-control stop by SIGCONT.
func (n native) Continue(ctx context.Context) (wire.State, error) {
	b := n.b
	b.settled(ctx)
	b.mu.Lock()
	st, p := b.state, b.proc
	b.mu.Unlock()
	if p == nil {
		return wire.State{}, b.errNoProcess()
	}
	b.mu.Lock()
	held := p.held || p.fault != nil
	b.mu.Unlock()
	switch stopped, _ := p.h.JobStopped(ctx); {
	case held:
		if err := p.h.Resume(ctx); err != nil {
			return wire.State{}, b.rankErr("%v", err)
		}
	case stopped:
		if err := unix.Kill(p.pid, unix.SIGCONT); err != nil {
			return wire.State{}, b.rankErr("continue process %d: %v", p.pid, err)
		}
	case st.State == wire.StateRunning:
		return wire.State{}, errors.New("the process is running already")
	}
	st = wire.State{State: wire.StateRunning}
	b.mu.Lock()
	p.held, p.fault, p.resumed = false, nil, true
	if b.proc == p { // one that ended at once has told its end already
		b.state = st
	}
	b.mu.Unlock()
	return st, nil
}

// Kill implements backend.Ops: SIGKILL ends the process, whose end is
// this command's news.
func (n native) Kill(ctx context.Context) (wire.State, error) {
	b := n.b
	b.mu.Lock()
	p := b.proc
	if p != nil {
		p.killed = true
	}
	b.mu.Unlock()
	if p == nil {
		return wire.State{}, b.errNoProcess()
	}
	if err := p.h.Kill(); err != nil {
		return wire.State{}, b.rankErr("%v", err)
	}
	if err := b.waitEnded(ctx, p); err != nil {
		return wire.State{}, err
	}
	st := wire.State{State: wire.StateExited, Reason: "killed"}
	b.emit(wire.EventExited, st)
	return st, nil
}

// Attach implements backend.Ops: the rank's process of a running job
// becomes the rank's, held without gdb (a fault stops it), stopped when
// asked. A job the session launched (Kill) or acquired before main is
// handed to gdb at once: its ranks may wait at MPIR_debug_gate, which gdb
// opens, and only gdb can run them to main.
func (n native) Attach(ctx context.Context, a wire.Attach) (wire.Attached, error) {
	b := n.b
	rank := b.cfg.Rank
	if rank >= len(a.Pids) {
		return wire.Attached{}, fmt.Errorf("the job's table has %d processes, none for rank %d", len(a.Pids), rank)
	}
	pid := a.Pids[rank]
	if pid <= 0 {
		st := wire.State{State: wire.StateNone}
		b.mu.Lock()
		b.state = st
		b.mu.Unlock()
		return wire.Attached{State: st}, nil
	}
	b.mu.Lock()
	busy := b.proc != nil
	b.mu.Unlock()
	if busy {
		return wire.Attached{}, errors.New("this rank debugs a process already")
	}
	if a.PreMain || a.Kill {
		return b.attachByGDB(ctx, a)
	}
	p, err := b.take(pid, a.Kill)
	if err != nil {
		return wire.Attached{}, err
	}
	st := wire.State{State: wire.StateRunning}
	if a.Stop || p.foundStopped {
		if !p.foundStopped {
			b.mu.Lock()
			p.held = true
			b.mu.Unlock()
			if err := p.h.Hold(ctx); err != nil {
				return wire.Attached{}, b.rankErr("%v", err)
			}
		}
		st = wire.State{State: wire.StateStopped, Reason: "signal-received", Signal: "SIGSTOP"}
		if stack, err := b.stackOf(ctx, p, pid); err == nil && len(stack.Frames) > 0 {
			st.Frame = stack.Frames[0]
		}
	}
	b.mu.Lock()
	b.state = st
	b.mu.Unlock()
	return wire.Attached{State: st}, nil
}

// attachByGDB hands the rank to gdb with the attach itself.
func (b *Backend) attachByGDB(ctx context.Context, a wire.Attach) (wire.Attached, error) {
	b.mu.Lock()
	b.handed = true
	b.mu.Unlock()
	answer, err := b.viaGDB(ctx, op.Attach.Name, wire.MustEncode(a))
	if err != nil {
		return wire.Attached{}, err
	}
	var at wire.Attached
	return at, wire.Decode(answer, &at)
}

// Detach implements backend.Ops: a process of a running job goes on
// without the session, as it was found: running, or in the job-control
// stop it was in (unless the session resumed it); a halt is undone, a
// fault's signal delivered.
func (n native) Detach(context.Context) (wire.State, error) {
	b := n.b
	b.mu.Lock()
	p := b.proc
	b.mu.Unlock()
	if p == nil || p.cmd != nil {
		return wire.State{}, errors.New("detach: no process attached (kill or quit end a program the debugger started)")
	}
	b.mu.Lock()
	b.proc = nil
	b.mu.Unlock()
	b.letGo(p)
	st := wire.State{State: wire.StateDetached}
	b.mu.Lock()
	b.state = st
	b.mu.Unlock()
	return st, nil
}

// Dlopen implements backend.Ops: the setting is gdbmi's, which keeps it
// without a gdb until one starts.
func (n native) Dlopen(ctx context.Context, d wire.Dlopen) (wire.Dlopen, error) {
	answer, err := n.b.viaGDB(ctx, op.Dlopen.Name, wire.MustEncode(d))
	if err != nil {
		return wire.Dlopen{}, err
	}
	var got wire.Dlopen
	return got, wire.Decode(answer, &got)
}
