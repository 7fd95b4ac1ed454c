package mpir

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Starter is a starter launched under MPIR, held in MPIR_Breakpoint with
// its job spawned until Release or Kill.
type Starter struct {
	Table Table

	wake chan struct{} // closed by Release or Kill
	kill bool
	stop bool // let go stopped
	once sync.Once
	done chan struct{}
	err  error // of letting go
}

// StartFunc starts the starter's process with attr, which traces it from
// its exec and puts it in a process group of its own, and returns its pid.
// Launch calls it on the thread that traces the process, as ptrace
// requires. The caller stays the process's parent, but must not wait for
// it before Launch has failed or Release or Kill has returned: a wait
// from any thread of ours would take the trace's stops.
type StartFunc func(attr *syscall.SysProcAttr) (pid int, err error)

// Launch starts a starter with MPIR_being_debugged set, runs it to
// MPIR_Breakpoint and reads the table of the job it spawned. On success
// the starter waits there until Release (after the ranks are attached) or
// Kill. On failure it is gone: killed, or, when it says it aborts (an
// *AbortError), let go to end by itself.
func Launch(ctx context.Context, start StartFunc) (*Starter, error) {
	if !archSupported {
		return nil, errArch
	}
	s := &Starter{wake: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go onTracer(func() {
		defer close(s.done)
		s.err = s.run(ctx, start, ready)
	})
	if err := <-ready; err != nil {
		<-s.done
		return nil, err
	}
	return s, nil
}

// Release lets the starter go on from MPIR_Breakpoint, untraced.
func (s *Starter) Release() error {
	s.once.Do(func() { close(s.wake) })
	<-s.done
	return s.err
}

// ReleaseStopped lets go of the starter but leaves it stopped (SIGSTOP),
// for a starter that is itself a rank (no MPIR_i_am_starter): its rank's
// debugger attaches to it next, and sets it going.
func (s *Starter) ReleaseStopped() error {
	s.once.Do(func() {
		s.stop = true
		close(s.wake)
	})
	<-s.done
	return s.err
}

// Kill ends the held starter and its process group.
func (s *Starter) Kill() {
	s.once.Do(func() {
		s.kill = true
		close(s.wake)
	})
	<-s.done
}

// run is the whole life of the trace, on the tracing thread: until the
// breakpoint (ready says how that went), then holding the starter until
// it is released or killed.
func (s *Starter) run(ctx context.Context, start StartFunc, ready chan<- error) error {
	pid, err := start(&syscall.SysProcAttr{Ptrace: true, Setpgid: true})
	if err != nil {
		ready <- err
		return nil
	}
	name := fmt.Sprintf("%s (pid %d)", "the starter", pid)
	if n, err := processName(pid); err == nil {
		name = n
	}
	t := newTraced(pid)
	defer t.close()
	t.threads[pid] = &thread{}
	fail := func(err error) error {
		// Nothing is left behind half-debugged: the starter and whatever
		// it spawned go.
		t.kill()
		ready <- err
		return nil
	}
	tab, orig, tid, err := t.toBreakpoint(ctx, name)
	if err != nil {
		var abort *AbortError
		if errors.As(err, &abort) {
			// It ends by itself, the way it chose.
			t.bp = 0
			t.stopAll(context.Background())
			t.detach()
			ready <- err
			return nil
		}
		return fail(err)
	}
	s.Table = tab
	ready <- nil

	// Hold: the starter's other threads go on and get their signals while
	// the ranks are attached.
	held := map[int]bool{tid: true}
	for {
		tid, ws, err := t.wait(context.Background(), 0, s.wake)
		if errors.Is(err, errExited) {
			return fmt.Errorf("%s exited while held in %s", name, symBreakpoint)
		}
		if err != nil {
			return err
		}
		if tid == 0 {
			break // woken: released or killed
		}
		if t.atBreakpoint(tid, ws) {
			held[tid] = true
			continue
		}
		if err := t.service(tid, ws); err != nil {
			return err
		}
	}
	if s.kill {
		t.kill()
		return nil
	}
	// Take the breakpoint out; held threads were wound back onto it.
	if err := t.write(t.bp, orig); err != nil {
		t.kill()
		return fmt.Errorf("%s: remove the breakpoint: %w", name, err)
	}
	t.bp = 0
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = t.stopAll(stop)
	if s.stop && t.threads[pid] != nil {
		t.threads[pid].sig = int(syscall.SIGSTOP)
	}
	if err := errors.Join(err, t.detach()); err != nil {
		return fmt.Errorf("let go of %s: %w", name, err)
	}
	return nil
}

// kill ends the starter's process group, and reaps its threads: a traced
// thread that dies waits for its tracer, and would keep the starter from
// ending. The starter itself is left for its parent to reap.
func (t *traced) kill() {
	syscall.Kill(-t.pid, syscall.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := t.wait(ctx, 0, nil); err != nil {
			return // errExited: all gone; or the deadline
		}
	}
}

// toBreakpoint runs the freshly started starter to its MPIR_Breakpoint in
// the SPAWNED state and reads the table there. It returns the bytes under
// the breakpoint and the thread that stopped on it, wound back.
func (t *traced) toBreakpoint(ctx context.Context, name string) (Table, []byte, int, error) {
	var tab Table
	pid := t.pid
	if _, _, err := t.wait(ctx, pid, nil); err != nil { // the stop at exec
		return tab, nil, 0, fmt.Errorf("%s did not start: %w", name, err)
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACECLONE|unix.PTRACE_O_TRACEEXEC|unix.PTRACE_O_EXITKILL); err != nil {
		return tab, nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	if err := t.openMemory(); err != nil {
		return tab, nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	// The interface may live in a library: at the program's entry point
	// the dynamic linker has loaded them all.
	entry, err := entryPoint(pid)
	if err != nil {
		return tab, nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := t.runTo(ctx, entry); err != nil {
		return tab, nil, 0, fmt.Errorf("%s: run to its entry point: %w", name, err)
	}
	syms, err := starterSymbols(pid, name)
	if err != nil {
		return tab, nil, 0, err
	}
	if syms.has(symBeingDebugged) {
		if err := t.writeInt32(syms.addr[symBeingDebugged], 1); err != nil {
			return tab, nil, 0, fmt.Errorf("%s: set %s: %w", name, symBeingDebugged, err)
		}
	}
	bp := syms.addr[symBreakpoint]
	orig, err := t.plant(bp)
	if err != nil {
		return tab, nil, 0, fmt.Errorf("%s: breakpoint on %s: %w", name, symBreakpoint, err)
	}
	for {
		tid, err := t.resumeTo(ctx, bp)
		if err != nil {
			return tab, nil, 0, fmt.Errorf("%s: wait for %s: %w", name, symBreakpoint, err)
		}
		state, err := t.readInt32(syms.addr[symDebugState])
		if err != nil {
			return tab, nil, 0, fmt.Errorf("%s: %w", name, err)
		}
		switch state {
		case debugSpawned:
			tab, err := t.readTable(syms)
			if err != nil {
				return tab, nil, 0, fmt.Errorf("%s: %w", name, err)
			}
			return tab, orig, tid, nil
		case debugAborting:
			// The caller lets it go: the breakpoint must be out first.
			err := t.abortError(syms)
			if werr := t.write(bp, orig); werr != nil {
				return tab, nil, 0, fmt.Errorf("%s: %w", name, werr)
			}
			return tab, nil, 0, err
		}
		// Called for something else: step over it and wait on.
		if err := t.stepOver(ctx, tid, orig); err != nil {
			return tab, nil, 0, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// plant writes the breakpoint instruction at addr and returns what it
// covered.
func (t *traced) plant(addr uint64) ([]byte, error) {
	orig, err := t.read(addr, len(breakpointInsn))
	if err != nil {
		return nil, err
	}
	if err := t.write(addr, breakpointInsn); err != nil {
		return nil, err
	}
	t.bp = addr
	return orig, nil
}

// runTo runs the stopped starter to addr with a breakpoint that is gone
// again when it returns.
func (t *traced) runTo(ctx context.Context, addr uint64) (int, error) {
	orig, err := t.plant(addr)
	if err != nil {
		return 0, err
	}
	tid, err := t.resumeTo(ctx, addr)
	t.bp = 0
	if werr := t.write(addr, orig); err == nil {
		err = werr
	}
	return tid, err
}

// resumeTo lets every stopped thread go and serves the starter's events
// until a thread stops on the breakpoint at t.bp; that thread is left
// stopped, wound back onto it.
func (t *traced) resumeTo(ctx context.Context, addr uint64) (int, error) {
	for tid, th := range t.threads {
		if th.stopped {
			if err := t.resume(tid, th.sig); err != nil {
				return 0, err
			}
			th.sig = 0
		}
	}
	for {
		tid, ws, err := t.wait(ctx, 0, nil)
		if err != nil {
			return 0, err
		}
		if t.atBreakpoint(tid, ws) {
			return tid, nil
		}
		if err := t.service(tid, ws); err != nil {
			return 0, err
		}
	}
}

// stepOver runs the instruction under the breakpoint on tid and puts the
// breakpoint back.
func (t *traced) stepOver(ctx context.Context, tid int, orig []byte) error {
	bp := t.bp
	if err := t.write(bp, orig); err != nil {
		return err
	}
	t.threads[tid].stopped = false
	if err := ptrace(unix.PTRACE_SINGLESTEP, tid, 0, 0); err != nil {
		return fmt.Errorf("step thread %d: %w", tid, err)
	}
	_, ws, err := t.wait(ctx, tid, nil)
	if err != nil {
		return err
	}
	if sig := ws.StopSignal(); sig != unix.SIGTRAP {
		t.threads[tid].sig = int(sig)
	}
	return t.write(bp, breakpointInsn)
}

// entryPoint reads the program's entry address from its auxiliary vector.
func entryPoint(pid int) (uint64, error) {
	auxv, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	const atEntry = 9
	for i := 0; i+16 <= len(auxv); i += 16 {
		if binary.LittleEndian.Uint64(auxv[i:]) == atEntry {
			return binary.LittleEndian.Uint64(auxv[i+8:]), nil
		}
	}
	return 0, errors.New("no entry point in its auxiliary vector")
}
