// Package mpir takes over the processes of a parallel job through the MPIR
// process-acquisition interface: a starter (mpirun, srun, …) that a
// debugger traces publishes in its memory the table of the job's
// processes (host, executable and pid of every rank) and stops in
// MPIR_Breakpoint for the debugger to read it.
//
// Launch starts a starter under the interface and holds it in
// MPIR_Breakpoint until the ranks are attached; Attach reads the table of
// a starter that runs already. The engine is ptrace itself, from one
// locked OS thread, with the symbols read from the ELF files that the
// starter has mapped: the starter is traced for a moment and never needs a
// debugger of its own. Only the starter is traced here; the ranks are for
// the rank servers' debuggers.
//
// What enters: how to start a starter (Launch's StartFunc) or the pid of
// one that runs (Attach). What leaves: the proctable (a Proc per rank:
// host, executable, pid) and, for Launch, the starter held until the
// ranks' debuggers have them.
//
// # The engine
//
// For a launch the engine starts the starter with PTRACE_TRACEME semantics
// (the child stops at exec), plants an int3 at the program's entry point
// (AT_ENTRY from /proc/PID/auxv) so that the shared libraries are loaded
// before the symbols are looked up, sets MPIR_being_debugged = 1, plants an
// int3 at MPIR_Breakpoint and runs the starter until it stops there with
// MPIR_debug_state = SPAWNED (any other state is stepped over and run on).
// For an attach it seizes every thread (PTRACE_SEIZE + PTRACE_INTERRUPT),
// reads the table, sets MPIR_being_debugged = 1 and lets the starter go at
// once. A launched starter is released only once its ranks are attached:
// its breakpoint removed, its pending signals re-delivered, and it is
// detached. Nothing stays traced.
//
// Symbols are looked up in every ELF object the starter has mapped
// (/proc/PID/maps), the executable first, in .dynsym and .symtab, with
// the load bias from the first PT_LOAD segment: Open MPI keeps them in
// libopen-rte.so.40, srun in its executable. A starter without
// MPIR_debug_state or MPIR_proctable is "not an MPIR starter"
// (NotStarterError; MPICH's Hydra mpiexec as Debian builds it is one
// such): its table can be made from /proc, or asked of PMIx (packages
// launcher and pmix).
//
// # The symbols
//
//	symbol                   meaning                            what sdm does
//	MPIR_debug_state         1 SPAWNED, 2 ABORTING              stops only at SPAWNED; ABORTING ends the
//	                                                            acquisition with MPIR_debug_abort_string
//	                                                            in the error
//	MPIR_Breakpoint          the starter calls it after each    int3 on it
//	                         state change
//	MPIR_being_debugged      tells the starter a debugger is    1 on acquire, 0 again when an attach
//	                         there                              session ends
//	MPIR_proctable, _size    host, executable, pid of every     read through /proc/PID/mem
//	                         rank
//	MPIR_debug_gate          ranks spin until it is 1           each rank's gdb sets it after attaching;
//	                                                            absent is fine
//	MPIR_i_am_starter        the starter is not one of the      absent, and rank 0's pid is the starter's:
//	                         ranks                              the starter is rank 0, released stopped
//	                                                            (SIGSTOP) for its own gdb
//	MPIR_acquired_pre_main   ranks are held before main         a launch runs every rank to main (srun
//	                                                            does this)
//	MPIR_partial_attach_ok   a subset of the ranks may be       --ranks SET is refused without it; the
//	                         attached                           others are released by releasing the
//	                                                            starter
//	MPIR_dll_name            the message-queue library          reported in the attach reply
//
// # Why ptrace and not gdb for the starter
//
// Speed: the engine stops a starter, reads its table and lets it go in
// milliseconds, where a gdb on mpirun would cost a start and a read of the
// symbols of every library mpirun maps (about 0.3 s) before the ranks' own
// gdbs could begin. Robustness: every ptrace call runs on one locked OS
// thread (the kernel ties a tracee to the tracing thread); new threads of
// a multi-threaded starter are followed with PTRACE_O_TRACECLONE; a
// SIGCHLD-driven wait loop, with a 200 ms backstop, reaps only the threads
// it traces (__WALL), and peeks at the leader's exit without reaping it,
// which is its parent's job; signals that arrive while the starter is held
// are re-delivered when it is released; whatever fails, the engine kills a
// starter it launched, or detaches from one it attached to, so that
// nothing is left stopped or traced. The price: amd64 only (breakpoint and
// registers), and a starter must not be the child of a process that waits
// for it while it is traced, since any thread of the tracing process would
// take the ptrace stops: the front end starts a launched starter itself,
// and the tests start a starter they attach to as a grandchild.
package mpir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The interface's names (the MPIR process-acquisition document).
const (
	symBreakpoint      = "MPIR_Breakpoint"
	symDebugState      = "MPIR_debug_state"
	symProctable       = "MPIR_proctable"
	symProctableSize   = "MPIR_proctable_size"
	symBeingDebugged   = "MPIR_being_debugged"
	symAbortString     = "MPIR_debug_abort_string"
	symIAmStarter      = "MPIR_i_am_starter"
	symAcquiredPreMain = "MPIR_acquired_pre_main"
	symPartialAttachOK = "MPIR_partial_attach_ok"
	symDLLName         = "MPIR_dll_name"
)

var allSymbols = []string{symBreakpoint, symDebugState, symProctable, symProctableSize, symBeingDebugged,
	symAbortString, symIAmStarter, symAcquiredPreMain, symPartialAttachOK, symDLLName}

// Values of MPIR_debug_state.
const (
	debugSpawned  = 1
	debugAborting = 2
)

// maxProcs bounds MPIR_proctable_size: a larger one is garbage.
const maxProcs = 1 << 24

// procDescSize is the size of an MPIR_PROCDESC on a 64-bit starter:
// {char *host_name; char *executable_name; int pid;} and padding.
const procDescSize = 24

// Proc is one rank's entry in MPIR_proctable.
type Proc struct {
	Host       string `json:"host"`
	Executable string `json:"executable"`
	Pid        int    `json:"pid"`
}

// Table is what a starter tells about its job.
type Table struct {
	Starter int    // the starter's process id
	Procs   []Proc // rank i is Procs[i]
	// Where the interface's symbols were found (the starter's executable,
	// or a library of it: Open MPI keeps them in libopen-rte).
	Object string
	// IAmStarter is MPIR_i_am_starter's presence: the starter is not a
	// rank. Without it the starter may itself be one of the ranks.
	IAmStarter bool
	// PartialAttachOK is MPIR_partial_attach_ok's presence: ranks that are
	// not attached go on by themselves once the starter is let go.
	PartialAttachOK bool
	// AcquiredPreMain is MPIR_acquired_pre_main's presence: the ranks are
	// held before main, so the debugger should run them to it.
	AcquiredPreMain bool
	// DLLName is MPIR_dll_name in the starter, when it has one: the
	// library that shows a debugger the message queues.
	DLLName string
	// Via says how the table was read when not through MPIR (a PMIx
	// server's, package pmix; a starter's own file): there is then no
	// MPIR_being_debugged to set or clear. Empty for MPIR.
	Via string
}

// ErrNotStarter says that a process does not offer the MPIR interface.
var ErrNotStarter = errors.New("not an MPIR starter")

// NotStarterError is ErrNotStarter for a given process: which of the
// interface's symbols it lacks.
type NotStarterError struct {
	Name      string // the process's command name and pid: "prterun (pid 12)"
	Missing   []string
	Libraries int // how many libraries were searched besides the executable
}

func (e *NotStarterError) Error() string {
	return fmt.Sprintf("%s is %v: no %s in it or its %d libraries", e.Name, ErrNotStarter, strings.Join(e.Missing, ", "), e.Libraries)
}

// Is makes errors.Is(err, ErrNotStarter) hold.
func (e *NotStarterError) Is(target error) bool { return target == ErrNotStarter }

// ErrNoProcess is wrapped when the pid given names no process (it has
// exited, or never was).
var ErrNoProcess = errors.New("no process")

// errArch is the answer on machines whose breakpoints and registers the
// engine does not know.
var errArch = errors.New("MPIR acquisition is implemented for x86-64 only")

// AbortError is a starter in MPIR_Breakpoint with MPIR_debug_state
// ABORTING: the job failed, for the reason the starter gives.
type AbortError struct {
	Starter int
	Message string // MPIR_debug_abort_string
}

func (e *AbortError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the starter (pid %d) says the job is aborting", e.Starter)
	}
	return fmt.Sprintf("the starter (pid %d) says the job is aborting: %s", e.Starter, e.Message)
}

// Attach reads the table of the job that the running starter pid has
// spawned, and sets its MPIR_being_debugged. The starter's threads stop
// for the moment of reading, so that the table does not change under it,
// and go on as they were.
func Attach(ctx context.Context, pid int) (Table, error) {
	var tab Table
	var err error
	onTracer(func() { tab, err = attach(ctx, pid, 1, true) })
	return tab, err
}

// Forget tells a starter that Attach read that the debugger is gone: its
// MPIR_being_debugged goes back to 0.
func Forget(ctx context.Context, pid int) error {
	var err error
	onTracer(func() { _, err = attach(ctx, pid, 0, false) })
	return err
}

func attach(ctx context.Context, pid int, being int32, read bool) (tab Table, err error) {
	if !archSupported {
		return tab, errArch
	}
	name, err := processName(pid)
	if err != nil {
		return tab, err
	}
	t := newTraced(pid)
	t.seized = true
	defer t.close()
	defer func() {
		// Let go of whatever was seized, whatever happened.
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if e := errors.Join(t.stopAll(stop), t.detach()); e != nil && err == nil {
			err = fmt.Errorf("let go of %s: %w", name, e)
		}
	}()
	if err := t.seize(); err != nil {
		return tab, fmt.Errorf("%s: %w", name, err)
	}
	if err := t.stopAll(ctx); err != nil {
		return tab, fmt.Errorf("%s: %w", name, err)
	}
	if err := t.openMemory(); err != nil {
		return tab, fmt.Errorf("%s: %w", name, err)
	}
	syms, err := starterSymbols(pid, name)
	if err != nil {
		return tab, err
	}
	if read {
		state, err := t.readInt32(syms.addr[symDebugState])
		if err != nil {
			return tab, fmt.Errorf("%s: %w", name, err)
		}
		if state == debugAborting {
			return tab, t.abortError(syms)
		}
		if tab, err = t.readTable(syms); err != nil {
			return tab, fmt.Errorf("%s: %w", name, err)
		}
	}
	// Only a starter whose job is spawned is told of the debugger: one
	// told before it spawns has its ranks wait for a debugger's release
	// in MPI_Init (Open MPI), and a failed attach must leave it as found.
	if syms.has(symBeingDebugged) {
		if err := t.writeInt32(syms.addr[symBeingDebugged], being); err != nil {
			return tab, fmt.Errorf("%s: set %s: %w", name, symBeingDebugged, err)
		}
	}
	return tab, nil
}

// seize attaches every thread of the process, again until no new one
// appeared while it did: a starter may start threads at any time.
func (t *traced) seize() error {
	for {
		tids, err := threadsOf(t.pid)
		if err != nil {
			return fmt.Errorf("list its threads: %w", err)
		}
		added := false
		for _, tid := range tids {
			if t.threads[tid] != nil {
				continue
			}
			err := ptrace(unix.PTRACE_SEIZE, tid, 0, unix.PTRACE_O_TRACECLONE)
			if errors.Is(err, unix.ESRCH) {
				continue // the thread ended meanwhile
			}
			if errors.Is(err, unix.EPERM) && tracerOf(tid) == os.Getpid() {
				// Seized already, as the new thread of one seized before.
				t.threads[tid] = &thread{asked: true}
				continue
			}
			if err != nil {
				return traceError(t.pid, err)
			}
			t.threads[tid] = &thread{}
			added = true
		}
		if !added {
			return nil
		}
	}
}

// traceError explains why ptrace refused a process.
func traceError(pid int, err error) error {
	if !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("trace it: %w", err)
	}
	if tracer := tracerOf(pid); tracer != 0 {
		name, _ := processName(tracer)
		return fmt.Errorf("may not trace it: %s traces it already", name)
	}
	return fmt.Errorf("may not trace it (%v): it belongs to another user, or kernel.yama.ptrace_scope forbids it (see /proc/sys/kernel/yama/ptrace_scope)", err)
}

// starterSymbols finds the interface in pid, or says it is not there.
func starterSymbols(pid int, name string) (symbols, error) {
	syms, err := lookup(pid, allSymbols)
	if err != nil {
		return syms, fmt.Errorf("%s: read its symbols: %w", name, err)
	}
	var missing []string
	for _, s := range []string{symBreakpoint, symDebugState, symProctable, symProctableSize} {
		if !syms.has(s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return syms, &NotStarterError{Name: name, Missing: missing, Libraries: max(syms.objects-1, 0)}
	}
	return syms, nil
}

func (t *traced) abortError(syms symbols) error {
	e := &AbortError{Starter: t.pid}
	if syms.has(symAbortString) {
		if p, err := t.readPointer(syms.addr[symAbortString]); err == nil {
			e.Message, _ = t.readString(p)
		}
	}
	return e
}

// readTable reads MPIR_proctable and what the presence-only symbols say.
func (t *traced) readTable(syms symbols) (Table, error) {
	tab := Table{
		Starter:         t.pid,
		Object:          syms.file[symBreakpoint],
		IAmStarter:      syms.has(symIAmStarter),
		PartialAttachOK: syms.has(symPartialAttachOK),
		AcquiredPreMain: syms.has(symAcquiredPreMain),
	}
	if syms.has(symDLLName) {
		tab.DLLName, _ = t.readString(syms.addr[symDLLName])
	}
	size, err := t.readInt32(syms.addr[symProctableSize])
	if err != nil {
		return tab, err
	}
	base, err := t.readPointer(syms.addr[symProctable])
	if err != nil {
		return tab, err
	}
	if size < 0 || size > maxProcs {
		return tab, fmt.Errorf("%s is %d: not a table size", symProctableSize, size)
	}
	if size == 0 || base == 0 {
		return tab, fmt.Errorf("its %s is empty: the job has not started (yet)", symProctable)
	}
	raw, err := t.read(base, int(size)*procDescSize)
	if err != nil {
		return tab, fmt.Errorf("read %s: %w", symProctable, err)
	}
	tab.Procs = make([]Proc, size)
	for i := range tab.Procs {
		e := raw[i*procDescSize:]
		p := &tab.Procs[i]
		if p.Host, err = t.readString(le64(e)); err == nil {
			p.Executable, err = t.readString(le64(e[8:]))
		}
		if err != nil {
			return tab, fmt.Errorf("%s entry %d: %w", symProctable, i, err)
		}
		p.Pid = int(int32(le32(e[16:])))
		if p.Pid <= 0 {
			return tab, fmt.Errorf("%s entry %d: pid %d", symProctable, i, p.Pid)
		}
	}
	return tab, nil
}

// processName is "name (pid N)", or an error when there is no such
// process.
func processName(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("%w with pid %d", ErrNoProcess, pid)
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w with pid %d", ErrNoProcess, pid)
		}
		return "", err
	}
	return fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), pid), nil
}

// tracerOf is the pid that traces pid, or 0.
func tracerOf(pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// Traced reports whether pid is stopped or traced by anyone: what must not
// be true of a rank once the debugger has let it go.
func Traced(pid int) (stopped bool, tracer int) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "State:"); ok {
			v = strings.TrimSpace(v)
			stopped = strings.HasPrefix(v, "T") || strings.HasPrefix(v, "t")
		}
	}
	return stopped, tracerOf(pid)
}
