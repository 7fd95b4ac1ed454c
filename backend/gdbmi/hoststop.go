package gdbmi

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend/program"
)

// A view's process stops and runs as a whole, as a gdb of the rank's own
// in all-stop mode has it. In non-stop mode gdb stops only the thread
// that hit a breakpoint, took a signal or ended a step; the view then
// interrupts the process's other threads, and tells the stop (the
// cause) once gdb has told each of theirs. It tells one *running when the
// process goes on, however many threads gdb says run. While a thread
// steps, the others run, as they do in all-stop mode; they are set going
// one by one after the step, never with the stepping thread, whose step
// may have ended already.
//
// A load's stop (stop-on-solib-events, which the host leaves on) is one
// thread's: it is told as it comes when the rank's settings stop at
// loads, and otherwise let go at once, the new libraries read first when
// the settings read them (auto-solib-add).

// record acts on a record of the view's inferior; route calls it, in
// gdb's order.
func (v *view) record(r Record) {
	switch {
	case r.Type == Notify && r.Class == "thread-group-started":
		v.mu.Lock()
		clear(v.local)
		clear(v.global)
		clear(v.running)
		v.nextThread, v.thread, v.frame, v.cause, v.told, v.untold, v.listNext = 0, 0, 0, nil, false, nil, 0
		v.pid, _ = strconv.Atoi(r.Results.S("pid"))
		v.gone = make(chan struct{})
		cpus := v.cpus
		if v.attached {
			cpus = nil
		}
		v.mu.Unlock()
		if pid, err := strconv.Atoi(r.Results.S("pid")); err == nil && cpus != nil {
			// gdb started it stopped: its threads, all to come, take
			// its processors.
			unix.SchedSetaffinity(pid, cpus)
		}
		v.push(r)
	case r.Type == Notify && r.Class == "thread-group-exited":
		v.mu.Lock()
		clear(v.local)
		clear(v.global)
		clear(v.running)
		v.thread, v.cause, v.told, v.pid = 0, nil, false, 0
		select {
		case <-v.gone:
		default:
			close(v.gone)
		}
		asked, stopped := v.ending > 0, v.killedStopped
		v.killedStopped = false
		v.mu.Unlock()
		v.push(r)
		if !asked {
			v.exited(r, stopped)
		}
	case r.Type == Notify && r.Class == "thread-created":
		id := r.Results.Int("id")
		v.mu.Lock()
		v.nextThread++
		v.local[id], v.global[v.nextThread] = v.nextThread, id
		v.mu.Unlock()
	case r.Type == Notify && r.Class == "thread-exited":
		id := r.Results.Int("id")
		v.mu.Lock()
		if len(v.local) > 0 && !v.othersRunning(0) && v.cause == nil {
			v.killedStopped = true
		}
		delete(v.global, v.local[id])
		delete(v.local, id)
		delete(v.running, id)
		v.mu.Unlock()
		v.settled()
	case r.Type == Notify && r.Class == "thread-selected":
		id, _ := strconv.Atoi(r.Results.S("id"))
		v.mu.Lock()
		v.thread, v.frame, v.listNext = id, r.Results.Get("frame").Int("level"), 0
		v.mu.Unlock()
	case r.Type == Notify && r.Class == "breakpoint-deleted":
		id := r.Results.Int("id")
		v.mu.Lock()
		if n, ok := v.points[id]; ok {
			delete(v.numbers, n)
			delete(v.points, id)
		}
		v.mu.Unlock()
	case r.Type == Notify && (r.Class == "library-loaded" || r.Class == "library-unloaded"):
		v.push(r)
	case r.Type == Exec && r.Class == "running":
		v.running1(r)
	case r.Type == Exec && r.Class == "stopped" && isExit(r.Results.S("reason")):
		v.mu.Lock()
		v.told, v.untold = false, nil
		killing := v.killing
		v.mu.Unlock()
		if !killing {
			v.push(r)
		}
	case r.Type == Exec && r.Class == "stopped":
		v.stopped1(r)
	}
}

// A process can end while all its threads are stopped only by SIGKILL:
// a stopped thread runs nothing, and any other signal waits for it to be
// resumed. gdb in non-stop mode reaps such a process without a *stopped,
// where a gdb of the rank's own, in all-stop mode, would have left the
// zombie to the Backend (process.go); the view then tells the end itself
// (killed), unless a command of the rank's ended the process (kill, run,
// detach), which tells the end its own way. gdb may also hold the end
// until the process is resumed; but a resume inserts the breakpoints of
// every inferior, and fails ("Command aborted") while another rank's
// process lies dead too, as a job's ranks do when it ends. reap has gdb
// detach from what is left instead, which gdb does for a process that
// ended by design: it reaps each thread it finds gone.

// reapWait bounds the wait for gdb to reap a process it waits for.
const reapWait = 5 * time.Second

// reap has gdb let go of the rank's process pid, which ended, and says
// whether it has. A process the inferior no longer holds (gdb told its
// end, or the rank runs another) was let go already: a late word of its
// death must not touch the next process, whose threads gdb may have set
// running before the view heard of it (a detach then aborts gdb 13:
// x86_linux_update_debug_registers: Assertion `lwp_is_stopped (lwp)').
func (v *view) reap(ctx context.Context, pid int) bool {
	v.mu.Lock()
	if v.pid != pid {
		v.mu.Unlock()
		return true
	}
	live, running, gone := len(v.local) > 0, v.othersRunning(0), v.gone
	id := v.thread
	for t, run := range v.running {
		if _, ok := v.local[t]; ok && run {
			id = t
			break
		}
	}
	v.mu.Unlock()
	if !live || v.h.g.Ended() {
		return true // nothing to let go of, or gdb let go of all as it ended
	}
	if !running {
		// The view hears of a resume after gdb's answer to it: gdb's own
		// word on its threads decides.
		var threads bool
		if running, id, threads = v.gdbRunning(ctx, id); !threads {
			return true // gdb has let go of the process
		}
	}
	if running {
		// gdb waits for it, but may not look for a while: an
		// interrupt of one of its threads, named (refused should it have
		// ended), makes gdb look, and reap it, as the rank's own gdb's
		// kill would have. (A detach from a thread gdb believes runs
		// fails gdb 13's x86_linux_update_debug_registers: Assertion
		// `lwp_is_stopped (lwp)'.)
		v.h.g.Run(ctx, "-exec-interrupt --thread "+strconv.Itoa(id))
		select {
		case <-gone:
			return true
		case <-v.h.g.Done():
			return true
		case <-time.After(reapWait):
			return false
		case <-ctx.Done():
			return false
		}
	}
	if _, _, err := v.h.g.Run(ctx, "-target-detach "+v.group); err == nil {
		return true
	}
	select {
	case <-gone: // gdb told the end meanwhile
		return true
	default:
		return false
	}
}

// gdbRunning says whether gdb holds a thread of the rank's inferior as
// running, and names one (else id), and whether it holds any.
func (v *view) gdbRunning(ctx context.Context, id int) (running bool, _ int, threads bool) {
	r, _, err := v.h.g.Run(ctx, "-list-thread-groups "+v.group)
	if err != nil {
		return false, id, true
	}
	list := r.Results.Get("threads").Items()
	for _, t := range list {
		if t.S("state") == "running" {
			return true, t.Int("id"), true
		}
	}
	return false, id, len(list) > 0
}

// reapNow is reap for the process watch, which waits for no command.
// It leaves alone a process that has not ended: gdb may have set its
// threads running before the view heard of it, and a detach of a running
// thread aborts gdb 13.
func (v *view) reapNow(pid int) {
	if !hasEnded(pid) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), viewTimeout)
	defer cancel()
	v.reap(ctx, pid)
}

// hasEnded says whether process pid is gone or a zombie.
func hasEnded(pid int) bool {
	fields := program.StatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	return len(fields) == 0 || fields[0] == "Z" || fields[0] == "X"
}

// exited makes sure the end of the rank's process, whose thread group
// gdb said exited (r), is told: gdb tells it with a *stopped, if at all,
// right after, before it answers a command sent now. So one is sent, and
// the end known (gdb's exit-code, or $_exitsignal, which gdb sets at an
// end it handled and the view clears once read, or SIGKILL for a process
// that was stopped) is told once the records before that answer have
// been routed without a *stopped of the end (Host.dispatch).
func (v *view) exited(r Record, stopped bool) {
	ctx, cancel := context.WithTimeout(context.Background(), viewTimeout)
	defer cancel()
	value := func(name string) (int, bool) {
		a, _, err := v.h.g.Run(ctx, "-data-evaluate-expression "+name)
		n, aerr := strconv.Atoi(a.Results.S("value"))
		return n, err == nil && aerr == nil
	}
	sig, signalled := value("$_exitsignal")
	v.h.g.Run(ctx, "-interpreter-exec console "+Quote("set $_exitsignal = $_exitcode = (void) 0"))
	mark := v.h.g.Mark()
	var end Record
	switch code := r.Results.S("exit-code"); {
	case code != "":
		end = exitedWith(code)
	case signalled:
		end = signalledWith(unix.SignalName(syscall.Signal(sig)))
	case stopped:
		end = signalledWith("SIGKILL")
	default:
		return // the Backend reads the end itself, or gdb tells it
	}
	v.mu.Lock()
	v.untold = &untoldEnd{mark: mark, end: end}
	v.mu.Unlock()
	v.h.mu.Lock()
	v.h.ending[v] = true
	v.h.mu.Unlock()
}

// untoldEnd is an end to tell once the host has routed mark records.
type untoldEnd struct {
	mark uint64
	end  Record
}

// tellEnd tells the untold end once the host has routed handled
// records, and says whether the view has none left to tell.
func (v *view) tellEnd(handled uint64) bool {
	v.mu.Lock()
	u := v.untold
	if u != nil && handled < u.mark {
		v.mu.Unlock()
		return false
	}
	v.untold = nil
	v.mu.Unlock()
	if u != nil {
		v.push(u.end)
	}
	return true
}

// exitedWith is gdb's *stopped at an exit with code (octal).
func exitedWith(code string) Record {
	res := Value{Kind: Tuple}
	if code == "0" {
		res = with(res, "reason", "exited-normally")
	} else {
		res = with(with(res, "reason", "exited"), "exit-code", code)
	}
	return Record{Type: Exec, Class: "stopped", Results: res}
}

// signalledWith is gdb's *stopped at an end by signal.
func signalledWith(signal string) Record {
	return Record{Type: Exec, Class: "stopped", Results: with(with(Value{Kind: Tuple}, "reason", "exited-signalled"), "signal-name", signal)}
}

// running1 takes gdb's word that a thread (or every thread) runs.
func (v *view) running1(r Record) {
	v.mu.Lock()
	if id := r.Results.S("thread-id"); id == "all" {
		for t := range v.local {
			v.running[t] = true
		}
	} else {
		n, _ := strconv.Atoi(id)
		v.running[n] = true
	}
	tell := !v.told && v.cause == nil
	if tell {
		v.told = true
		r.Results = with(r.Results, "thread-id", "all")
	}
	v.mu.Unlock()
	if tell {
		v.push(r)
	}
}

// stopped1 takes gdb's word that a thread stopped. It waits for a step
// to have set the other threads going, so that it knows which run.
func (v *view) stopped1(r Record) {
	id, _ := strconv.Atoi(r.Results.S("thread-id"))
	v.resuming.Lock()
	defer v.resuming.Unlock()
	v.mu.Lock()
	v.running[id] = false
	switch {
	case v.killing:
		// The stop kill asked for before its SIGKILL: the end is the
		// news.
		v.mu.Unlock()
		return
	case v.cause != nil:
		// One of the threads stopped for the cause; another thread's own
		// stop meanwhile is left for gdb to tell again, as all-stop does.
		v.mu.Unlock()
		v.settled()
		return
	case r.Results.S("reason") == "solib-event" && !v.solib.stop:
		auto := v.solib.auto
		v.mu.Unlock()
		v.loadGoesOn(id, auto)
		return
	case r.Results.S("reason") == "solib-event":
		// The load's thread is selected, as in all-stop mode: what the
		// rank does at the load (sharedlibrary) runs there, not on the
		// thread gdb selected last, another rank's, which may end
		// meanwhile (gdb 16 fails an assertion then).
		v.told = false
		v.thread, v.frame, v.listNext = id, 0, 0
		v.mu.Unlock()
		v.push(v.translate(r))
		return
	}
	v.cause = &r
	others := v.othersRunning(id)
	v.mu.Unlock()
	if others {
		ctx, cancel := context.WithTimeout(context.Background(), viewTimeout)
		_, _, err := v.h.g.Run(ctx, "-exec-interrupt --thread-group "+v.group)
		cancel()
		if err == nil {
			v.settled()
			return
		}
	}
	v.tell()
}

// othersRunning says, with mu held, whether a thread other than id runs.
func (v *view) othersRunning(id int) bool {
	for t, run := range v.running {
		if run && t != id {
			if _, ok := v.local[t]; ok {
				return true
			}
		}
	}
	return false
}

// settled tells the cause once no thread of the process runs.
func (v *view) settled() {
	v.mu.Lock()
	waiting := v.cause != nil && !v.othersRunning(0)
	v.mu.Unlock()
	if waiting {
		v.tell()
	}
}

// tell tells the cause: the process has stopped, at its thread, which is
// selected.
func (v *view) tell() {
	v.mu.Lock()
	cause := v.cause
	v.cause = nil
	if cause == nil {
		v.mu.Unlock()
		return
	}
	v.told = false
	id, _ := strconv.Atoi(cause.Results.S("thread-id"))
	v.thread, v.frame, v.listNext = id, 0, 0
	v.mu.Unlock()
	r := *cause
	if r.Results.S("reason") == "signal-received" && r.Results.S("signal-name") == "0" {
		// An interrupt (-exec-interrupt), which gdb tells in all-stop
		// mode as SIGINT.
		r.Results = with(with(r.Results, "signal-name", "SIGINT"), "signal-meaning", "Interrupt")
	}
	v.push(v.translate(r))
}

// loadGoesOn lets a thread that a load stopped go on, after reading the
// new libraries when the rank's settings read them.
func (v *view) loadGoesOn(id int, auto bool) {
	ctx, cancel := context.WithTimeout(context.Background(), symbolTimeout)
	defer cancel()
	thread := "--thread " + strconv.Itoa(id)
	if auto {
		v.h.g.Run(ctx, "-interpreter-exec "+thread+" console sharedlibrary")
	}
	v.h.g.Run(ctx, "-exec-continue "+thread)
}

// translate gives a stop the rank's numbers for its thread and
// breakpoint.
func (v *view) translate(r Record) Record {
	v.mu.Lock()
	defer v.mu.Unlock()
	res := without(r.Results, "stopped-threads")
	if id, err := strconv.Atoi(res.S("thread-id")); err == nil {
		res = with(res, "thread-id", strconv.Itoa(v.local[id]))
	}
	if res.Has("bkptno") {
		res = with(res, "bkptno", strconv.Itoa(v.points[res.Int("bkptno")]))
	}
	for _, key := range []string{"wpt", "hw-rwpt", "hw-awpt"} {
		if w := res.Get(key); w.Kind == Tuple {
			res = withValue(res, key, with(w, "number", strconv.Itoa(v.points[w.Int("number")])))
		}
	}
	r.Results = res
	return r
}

// push hands a record to the Backend.
func (v *view) push(r Record) { v.queue.Push(r) }

// resume sets the process going (a continue), or stops it (an
// interrupt): every thread, or, for a continue while scheduler-locking is
// on, the selected one alone. gdb would act on the thread it has selected,
// another rank's, for a thread group without a process.
func (v *view) resume(ctx context.Context, command string) (Record, string, error) {
	interrupt := strings.HasPrefix(command, "-exec-interrupt")
	if !interrupt {
		v.resumes.RLock()
		defer v.resumes.RUnlock()
	}
	v.mu.Lock()
	live, locked, thread, killing := len(v.local) > 0, v.locked, v.thread, v.killing
	v.mu.Unlock()
	switch {
	case !live:
		return Record{}, "", newRefusal("The program is not being run.")
	case killing && !interrupt:
		return Record{}, "", errKilling
	case locked && !interrupt:
		return v.h.g.Run(ctx, inject(command, "--thread "+strconv.Itoa(thread)))
	}
	return v.h.g.Run(ctx, inject(command, "--thread-group "+v.group))
}

// step steps the selected thread, and sets the others going once the
// step has started.
func (v *view) step(ctx context.Context, command string) (Record, string, error) {
	v.resumes.RLock()
	defer v.resumes.RUnlock()
	v.mu.Lock()
	locked, killing := v.locked, v.killing
	v.mu.Unlock()
	if killing {
		return Record{}, "", errKilling
	}
	if locked {
		return v.h.g.Run(ctx, inject(command, v.context()))
	}
	// The stop that ends the step waits (stopped1) until the other
	// threads are known to run: it may come before the step's answer is
	// read, and gdb's *running for them after it.
	v.resuming.Lock()
	defer v.resuming.Unlock()
	r, out, err := v.h.g.Run(ctx, inject(command, v.context()))
	if err != nil {
		return r, out, err
	}
	v.mu.Lock()
	stepping := v.thread
	var others []int
	for t := range v.local {
		if t != stepping && !v.running[t] {
			others = append(others, t)
		}
	}
	v.mu.Unlock()
	for _, t := range others {
		if _, _, err := v.h.g.Run(ctx, "-exec-continue --thread "+strconv.Itoa(t)); err == nil {
			v.mu.Lock()
			v.running[t] = true
			v.mu.Unlock()
		}
	}
	return r, out, nil
}
