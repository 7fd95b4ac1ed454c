package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// attach has a fresh gdb take over the rank's process of a running job
// (acquired through MPIR): it opens the process's MPIR_debug_gate, where
// there is one, runs it to main when it was held before main, and lets it
// go on unless asked to leave it stopped.
func (b *Backend) attach(ctx context.Context, a wire.Attach) (wire.Attached, error) {
	rank := b.cfg.Rank
	if rank >= len(a.Pids) {
		return wire.Attached{}, fmt.Errorf("the job's table has %d processes, none for rank %d", len(a.Pids), rank)
	}
	pid := a.Pids[rank]
	if pid <= 0 {
		b.setState(wire.State{State: wire.StateNone})
		return wire.Attached{State: wire.State{State: wire.StateNone}}, nil
	}
	if _, err := b.debugger(); err == nil {
		return wire.Attached{}, errors.New("this rank debugs a process already")
	}
	g, err := b.launch()
	if err != nil {
		return wire.Attached{}, err
	}
	b.setAttaching(true)
	defer b.setAttaching(false)
	run := func(cmd string) (Record, string, error) { return g.Run(ctx, cmd) }
	if err := b.takeOver(ctx, g, run, pid); err != nil {
		return wire.Attached{}, fmt.Errorf("attach to pid %d: %w", pid, err)
	}
	b.mu.Lock()
	b.attached, b.killOnClose, b.started = true, a.Kill, true
	b.mu.Unlock()

	// An MPI library has both MPIR_debug_gate and MPIR_dll_name, or
	// neither: a program without the gate is not asked for the name (a
	// symbol a program lacks is searched for in every library, 4 ms a rank).
	var dll string
	_, _, err = run("-data-evaluate-expression " + Quote("*(int*)&MPIR_debug_gate = 1"))
	switch {
	case err == nil:
		if r, _, err := run("-data-evaluate-expression " + Quote("(const char*)&MPIR_dll_name")); err == nil {
			dll = quotedPart(r.Results.S("value"))
		}
	case !errors.Is(err, ErrNoSymbol):
		return wire.Attached{}, fmt.Errorf("open MPIR_debug_gate: %w", err)
	}
	if a.PreMain {
		if err := b.runToMain(ctx, g, run); err != nil {
			return wire.Attached{}, fmt.Errorf("run to main: %w", err)
		}
	}
	if !a.Stop {
		if _, err := b.resume(g, run, "-exec-continue"); err != nil {
			return wire.Attached{}, err
		}
	}
	b.mu.Lock()
	st := b.state
	b.mu.Unlock()
	return wire.Attached{State: st, DLL: dll}, nil
}

// takeOver attaches gdb to process pid and waits for the stop that
// attaching makes.
func (b *Backend) takeOver(ctx context.Context, g conn, run func(string) (Record, string, error), pid int) error {
	// A starter may hold its ranks with SIGSTOP (srun does) and let them
	// go with SIGCONT: neither is news for the user, nor must the SIGSTOP
	// stop the process again once it runs.
	for _, sig := range []string{"SIGSTOP nostop noprint nopass", "SIGCONT nostop noprint pass"} {
		if _, _, err := run("-interpreter-exec console " + Quote("handle "+sig)); err != nil {
			return err
		}
	}
	since := b.reports()
	if _, _, err := run("-target-attach " + strconv.Itoa(pid)); err != nil {
		return err
	}
	if _, err := b.waitStop(ctx, since); err != nil {
		return err
	}
	// Every library the process has loaded is read, whatever the dlopen
	// setting: it applies to the loads from now on.
	return b.readAttached(ctx, g, run)
}

// readAttached reads the symbols of the libraries of a process just
// attached. In a shared gdb (non-stop) a thread of it can be going again
// by then (a SIGCONT passed on sets it going), and gdb refuses to read
// through a running thread: the process is stopped again and read again.
func (b *Backend) readAttached(ctx context.Context, g conn, run func(string) (Record, string, error)) error {
	err := b.readSymbols(g)
	for try := 0; try < 3 && err != nil && strings.Contains(err.Error(), "is running"); try++ {
		since := b.reports()
		if _, _, ierr := run("-exec-interrupt"); ierr != nil {
			return fmt.Errorf("%w (and stopping it again: %v)", err, ierr)
		}
		// The stop may not be news (another thread's was told): the
		// wait is short, and the read says whether it is stopped.
		wait, cancel := context.WithTimeout(ctx, interruptWait)
		b.waitStop(wait, since)
		cancel()
		err = b.readSymbols(g)
	}
	return err
}

// runToMain runs a process held before main to the start of main.
func (b *Backend) runToMain(ctx context.Context, g conn, run func(string) (Record, string, error)) error {
	if _, _, err := run("-break-insert -t main"); err != nil {
		return err
	}
	since := b.reports()
	if _, err := b.resume(g, run, "-exec-continue"); err != nil {
		return err
	}
	_, err := b.waitStop(ctx, since)
	return err
}

// detach lets an attached process go on without gdb.
func (b *Backend) detach(ctx context.Context, g conn) (wire.State, error) {
	b.mu.Lock()
	attached := b.attached
	b.mu.Unlock()
	if !attached {
		return wire.State{}, errors.New("detach: no process attached (kill or quit end a program the debugger started)")
	}
	if err := b.stopToDetach(ctx, g); err != nil {
		return wire.State{}, err
	}
	if _, _, err := g.Run(ctx, "-target-detach"); err != nil {
		return wire.State{}, err
	}
	st := wire.State{State: wire.StateDetached}
	b.mu.Lock()
	b.attached, b.pid = false, 0
	b.mu.Unlock()
	b.setState(st)
	return st, nil
}

// stopToDetach stops a running process before gdb detaches from it, its
// stop no news: gdb 13 detaching from a process that runs, with a signal
// on its way to it (a starter's SIGCONT), fails an assertion of its own
// and then hangs as it ends, holding the process.
func (b *Backend) stopToDetach(ctx context.Context, g conn) error {
	b.mu.Lock()
	running := b.state.State == wire.StateRunning && !b.held
	b.mu.Unlock()
	if !running {
		return nil
	}
	b.setAttaching(true)
	defer b.setAttaching(false)
	if _, err := b.interrupt(ctx, func(cmd string) (Record, string, error) { return g.Run(ctx, cmd) }); err != nil {
		return fmt.Errorf("stop the process to detach from it: %w", err)
	}
	return nil
}

// quotedPart is the C string in a value gdb printed as
// `0x4010 <name> "text"`.
func quotedPart(v string) string {
	i := strings.IndexByte(v, '"')
	if i < 0 {
		return ""
	}
	s, err := strconv.Unquote(v[i:])
	if err != nil {
		return strings.Trim(v[i:], `"`)
	}
	return s
}
