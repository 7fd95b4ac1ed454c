package gdbmi

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sdm-hpc/sdm/wire"
)

// watch turns gdb's asynchronous records into events until gdb ends; if
// gdb ends while the backend is open, that is an error event. Records
// about a process that has ended (gdb's own words for a death reported
// already, a continue that met a dead process) are stale until gdb
// starts a new one.
func (b *Backend) watch(g conn, done chan<- struct{}) {
	defer close(done)
	for r := range g.Async() {
		b.record(g, r)
		g.Handled()
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if !closed {
		b.exited(wire.State{State: wire.StateExited, Reason: "debugger exited"})
		b.emit(wire.EventError, []byte(g.Err().Error()))
	}
}

// record acts on one asynchronous record.
func (b *Backend) record(g conn, r Record) {
	b.mu.Lock()
	gone := b.gone
	b.mu.Unlock()
	switch {
	case r.Type == Exec && gone && r.Class == "running":
		b.mu.Lock()
		if b.quietRuns > 0 {
			b.quietRuns-- // the backend's own continue, which met the death
		}
		b.mu.Unlock()
	case r.Type == Exec && gone && r.Results.S("reason") == "solib-event":
	case r.Type == Exec && r.Class == "running":
		b.mu.Lock()
		quiet := b.quietRuns > 0
		st := wire.State{State: wire.StateRunning}
		if quiet {
			b.quietRuns--
		} else if b.going.State != "" {
			st, b.going = b.going, wire.State{}
		}
		b.mu.Unlock()
		if !quiet {
			b.setState(st)
			b.emit(wire.EventRunning, nil)
		}
	case r.Type == Exec && r.Class == "stopped" && r.Results.S("reason") == "solib-event":
		b.solibStop(g, r.Results)
	case r.Type == Exec && r.Class == "stopped":
		b.stopped(g, r.Results)
	case r.Type == Notify && r.Class == "library-loaded":
		b.libraryLoaded(r.Results.S("target-name"), r.Results.S("symbols-loaded") == "1")
	case r.Type == Notify && r.Class == "thread-group-started":
		pid, _ := strconv.Atoi(r.Results.S("pid"))
		b.mu.Lock()
		// A quiet continue's *running not met is the old process's: a
		// shared gdb's view does not tell one while it reaps.
		b.pid, b.quietRuns = pid, 0
		b.newProcess()
		b.mu.Unlock()
		b.watchProcess(g, pid)
	case r.Type == Notify && r.Class == "thread-group-exited":
		// The end itself is reported by the *stopped record that
		// follows (with the exit code or the signal), or, for a program
		// gdb killed, by the kill command. Either way gdb is done with
		// the process, and says what became of it.
		b.mu.Lock()
		b.pid = 0
		b.mu.Unlock()
		b.unwatch()
	}
}

// stopped handles a *stopped record: a stop, or the end of the program.
// Libraries loaded since the last read are read before the stop is
// reported, and its frame asked again, since it may lie in one of them.
func (b *Backend) stopped(g conn, res Value) {
	reason := res.S("reason")
	b.mu.Lock()
	gone := b.gone
	b.mu.Unlock()
	switch reason {
	case "exited-normally":
		b.exited(wire.State{State: wire.StateExited, Reason: "exited"})
		return
	case "exited":
		code, _ := strconv.ParseInt(res.S("exit-code"), 8, 32) // gdb prints it in octal
		b.exited(wire.State{State: wire.StateExited, Reason: "exited", Code: int(code)})
		return
	case "exited-signalled":
		b.exited(wire.State{State: wire.StateExited, Reason: "killed by a signal", Signal: res.S("signal-name")})
		return
	}
	if gone {
		return // about a process that is no more
	}
	st := wire.State{
		State:      wire.StateStopped,
		Reason:     reason,
		Frame:      frame(res.Get("frame")),
		Signal:     res.S("signal-name"),
		Breakpoint: res.Int("bkptno"),
	}
	if st.Reason == "" {
		st.Reason = "stopped"
	}
	changed(&st, res)
	b.mu.Lock()
	unread := b.unread
	b.mu.Unlock()
	if unread {
		if err := b.readSymbols(g); err != nil {
			b.emit(wire.EventWarning, []byte(err.Error()))
		} else if f, err := currentFrame(g); err == nil {
			st.Frame = f
		}
	}
	if id, addr, ok := wrapperHit(res, st.Frame.From); ok {
		if err := b.keepToWrapper(g, id, addr); err != nil {
			b.emit(wire.EventWarning, []byte(fmt.Sprintf("breakpoint %d stops in MPI's own routine too: %v", st.Breakpoint, err)))
		}
	}
	if b.pass(g, st) {
		return
	}
	if b.lateStop(st) {
		if err := b.continueQuietly(g); err == nil {
			return
		}
	}
	// The news goes out before the state changes: an answer that says
	// stopped (to status, say) then comes after the stop itself.
	b.announce.Lock()
	defer b.announce.Unlock()
	b.mu.Lock()
	if b.gone {
		b.mu.Unlock()
		return // it ended while its stop was read: the end is the news
	}
	b.announcing++
	b.mu.Unlock()
	b.out.Drain()
	b.emit(wire.EventStopped, wire.MustEncode(st))
	b.mu.Lock()
	b.state, b.held = st, false
	b.announcing--
	b.report()
	b.mu.Unlock()
}

// currentFrame asks gdb for the selected frame.
func currentFrame(g conn) (wire.Frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	r, _, err := g.Run(ctx, "-stack-info-frame")
	if err != nil {
		return wire.Frame{}, err
	}
	return frame(r.Results.Get("frame")), nil
}

// exited reports the end of the program, once however many records tell
// it (a kill's, gdb's own). As for a stop, the news goes out before the
// state changes.
func (b *Backend) exited(st wire.State) {
	b.announce.Lock()
	defer b.announce.Unlock()
	b.mu.Lock()
	if b.state.State == wire.StateExited || b.exiting {
		b.mu.Unlock()
		return
	}
	b.exiting = true
	b.announcing++
	b.mu.Unlock()
	b.out.Drain()
	b.emit(wire.EventExited, wire.MustEncode(st))
	b.mu.Lock()
	b.state, b.pid, b.held, b.exiting, b.gone = st, 0, false, false, true
	b.announcing--
	b.report()
	b.mu.Unlock()
}

// frame converts an MI frame tuple.
func frame(v Value) wire.Frame {
	f := wire.Frame{Func: v.S("func"), File: v.S("file"), Line: v.Int("line")}
	if f.File == "" {
		f.From = v.S("from")
	}
	if f.Func == "" {
		f.Func = "??"
	}
	return f
}

// changed adds what a stop tells of values: the value a finish returned,
// a watchpoint's number and the watched expression's old and new values.
func changed(st *wire.State, res Value) {
	if res.Has("return-value") {
		st.Value = dereferenced(res.S("return-value"))
	}
	for _, key := range []string{"wpt", "hw-rwpt", "hw-awpt"} {
		if res.Has(key) {
			st.Breakpoint = res.Get(key).Int("number")
		}
	}
	if v := res.Get("value"); v.Kind == Tuple {
		st.Old, st.New = v.S("old"), v.S("new")
		if st.New == "" {
			st.New = v.S("value")
		}
	}
}
