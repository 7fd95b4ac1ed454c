package gdbmi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// Libraries the program loads, by the dlopen setting (package dlopen).
//
// gdb never reads a library's symbols on its own (auto-solib-add off):
// that is what a load costs gdb, and what plants pending breakpoints. The
// backend has it read them (the sharedlibrary command) at five moments:
//
//   - when the program starts, for the libraries it is linked with (the
//     dynamic linker's first load), and when gdb attaches, for those
//     loaded already: in every mode, so that a breakpoint in a library the
//     program is linked with always works;
//   - when the front end answers a reported load (OpPlant);
//   - in auto mode, at a load that stops the process because a breakpoint
//     is pending: the rank reads the library itself and goes on;
//   - at every stop it reports, before it reports it, so that the stop's
//     frame and every command after it see the new libraries;
//   - before it lets a stopped process go on.
//
// Whether a load stops the process is stop-on-solib-events: on in slow and
// medium mode (gdb stops with reason solib-event, naming the libraries
// added), off in fast mode, where gdb still traps each load in the dynamic
// linker to keep its list of libraries, and lets the process go on at once.
// Auto mode is fast but for the time a breakpoint is pending (or always,
// with a list of libraries to report): the backend works out whether one
// is (-break-list) whenever it works out the settings, and after every
// command that may add, remove, enable or disable one while the process
// runs. A load that a pending breakpoint stopped is not reported: the rank
// reads the new library itself, which plants the breakpoint if it is
// there, works the settings out again, and lets the process go on, so the
// first load that plants the last pending breakpoint turns the stops off
// before the process goes on. The front end has nothing to do at such a
// load, and asking it would cost a round trip through the tree per load.
//
// A stop at a load the mode neither reports nor reads, or one that adds
// nothing (the linker's announcements before a load, an unload), is let
// go here without a word. A reported one holds the rank until the front
// end's OpPlant.
//
// A step (step, next, finish) that a load stopped could not be resumed: gdb
// drops it. While a step runs, loads do not stop the process; where the
// mode would have stopped it, gdb reads each new library itself
// (auto-solib-add on), so that a breakpoint in it is still hit within the
// step.

// solibVars are the gdb settings that decide what a load does.
type solibVars struct {
	stop bool // stop-on-solib-events
	auto bool // auto-solib-add
}

// wantedVars returns the settings for a process that is about to go on:
// before its start-up libraries are read, every load stops; then it is up
// to the mode, to whether a breakpoint is pending, and to whether the
// process steps.
func wantedVars(s dlopen.Setting, started, step, pending bool) solibVars {
	switch {
	case !started:
		return solibVars{stop: true}
	case step:
		return solibVars{auto: s.Stops(pending)}
	}
	return solibVars{stop: s.Stops(pending)}
}

// symbolTimeout bounds a read of libraries' symbols, which for a large
// library with full debug information takes seconds.
const symbolTimeout = 5 * time.Minute

// settle makes gdb's settings those the process needs from now on: its
// mode's, for a step or not (b.stepping), with a pending breakpoint or
// not. The breakpoints are listed only in a mode that depends on them
// (auto), once the start-up libraries are read. The list is read and the
// settings changed under b.settling.
func (b *Backend) settle(g conn) error {
	b.settling.Lock()
	defer b.settling.Unlock()
	b.mu.Lock()
	s, started, step := b.dl, b.started, b.stepping
	b.mu.Unlock()
	pending := false
	if s.WatchesPending() && started {
		var err error
		if pending, err = pendingBreakpoints(g); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.pending = pending
	b.mu.Unlock()
	return b.setSolib(g, wantedVars(s, started, step, pending))
}

// pendingBreakpoints says whether an enabled breakpoint waits for a
// library that is not loaded yet. A disabled one cannot be hit; should it
// be enabled, the command that does so settles again.
func pendingBreakpoints(g conn) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	r, _, err := g.Run(ctx, "-break-list")
	if err != nil {
		return false, fmt.Errorf("list the breakpoints to see whether one is pending: %w", err)
	}
	for _, v := range r.Results.Get("BreakpointTable").Get("body").Items() {
		if bp := breakpoint(v); bp.Pending && bp.Enabled {
			return true, nil
		}
	}
	return false, nil
}

// breakpointsChanged settles a running process after a command that may
// have added, removed, enabled or disabled a pending breakpoint, so that
// in auto mode the next load stops, or no longer does. A stopped process
// settles when it goes on, a held one at its OpPlant. The command itself
// succeeded, so a failure here is a warning.
func (b *Backend) breakpointsChanged(g conn) {
	b.mu.Lock()
	now := b.dl.WatchesPending() && b.started && b.state.State == wire.StateRunning && !b.held
	b.mu.Unlock()
	if !now {
		return
	}
	if err := b.settle(g); err != nil {
		b.emit(wire.EventWarning, []byte("library loads may not stop for a pending breakpoint: "+err.Error()))
	}
}

// setSolib changes gdb's settings to v where they differ; b.settling is
// held. gdb takes them while the process runs, and applies them from the
// next load on.
func (b *Backend) setSolib(g conn, v solibVars) error {
	b.mu.Lock()
	have := b.solib
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, set := range []struct {
		name       string
		want, have bool
	}{
		{"stop-on-solib-events", v.stop, have.stop},
		{"auto-solib-add", v.auto, have.auto},
	} {
		if set.want == set.have {
			continue
		}
		value := "0"
		if set.want {
			value = "1"
		}
		if _, _, err := g.Run(ctx, "-gdb-set "+set.name+" "+value); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.solib = v
	b.mu.Unlock()
	return nil
}

// readSymbols has gdb read the symbols of every library it has not read,
// which plants the pending breakpoints they hold.
func (b *Backend) readSymbols(g conn) error {
	b.mu.Lock()
	b.unread = false // a library reported from now on is unread again
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), symbolTimeout)
	defer cancel()
	if _, _, err := g.Run(ctx, "-interpreter-exec console sharedlibrary"); err != nil {
		return fmt.Errorf("read the symbols of new libraries: %w", err)
	}
	return nil
}

// libraryLoaded notes a =library-loaded notification: unread symbols, and
// the CUDA driver, which medium mode warns about once per setting when its
// list leaves it out.
func (b *Backend) libraryLoaded(lib string, symbols bool) {
	b.mu.Lock()
	if !symbols {
		b.unread = true
	}
	warn := ""
	if dlopen.IsCUDA(lib) {
		b.cuda = lib
		if b.dl.LeavesOutCUDA(lib) && !b.cudaWarned {
			b.cudaWarned = true
			warn = b.dl.CUDAWarning(lib)
		}
	}
	b.mu.Unlock()
	if warn != "" {
		b.emit(wire.EventWarning, []byte(warn))
	}
}

// solibStop handles a stop at a load (reason solib-event).
func (b *Backend) solibStop(g conn, res Value) {
	added := libraries(res.Get("added"))
	b.mu.Lock()
	b.loadStops++
	startup := b.attaching || !b.started
	report := false
	for _, lib := range added {
		report = report || b.dl.Reports(lib)
	}
	report = report && !startup
	read := !startup && len(added) > 0 && b.dl.ReadsAtLoad(b.pending)
	b.mu.Unlock()
	switch {
	case report:
		b.hold(added)
	case startup && len(added) > 0:
		// The libraries the program starts with: read in every mode.
		if err := b.readSymbols(g); err != nil {
			b.emit(wire.EventWarning, []byte(err.Error()))
		}
		b.mu.Lock()
		b.started = true
		b.mu.Unlock()
		if err := b.settle(g); err != nil {
			b.emit(wire.EventWarning, []byte(err.Error()))
		}
		b.goOnQuietly(g)
	case read:
		// A breakpoint waits for a library, maybe this one: plant it
		// before the library's code runs, and stop no more once none
		// waits.
		if err := b.readSymbols(g); err != nil {
			b.emit(wire.EventWarning, []byte(err.Error()))
		}
		if err := b.settle(g); err != nil {
			b.emit(wire.EventWarning, []byte(err.Error()))
		}
		b.goOnQuietly(g)
	default:
		b.goOnQuietly(g)
	}
}

// hold keeps the process stopped at a load the front end must see, until
// its OpPlant. The rank counts as running meanwhile: it goes on without
// the user.
func (b *Backend) hold(added []string) {
	b.mu.Lock()
	b.held = true
	b.state = wire.State{State: wire.StateRunning, Reason: wire.ReasonLoad}
	b.report()
	b.mu.Unlock()
	b.emit(wire.EventLoaded, wire.MustEncode(wire.Loaded{Libraries: added}))
}

// goOnQuietly lets a process that gdb stopped at a load go on, with no
// news: as far as anyone outside knows, it never stopped. Should gdb
// refuse, the stop is reported after all, so that no rank is left stopped
// while it looks to be running.
func (b *Backend) goOnQuietly(g conn) {
	if err := b.continueQuietly(g); err != nil {
		b.mu.Lock()
		gone := b.state.State == wire.StateExited || b.pid == 0
		b.mu.Unlock()
		if gone || errors.Is(err, ErrRunning) {
			return // the user's own kill or continue came first
		}
		b.emit(wire.EventWarning, []byte("could not let a library load go on: "+err.Error()))
		st := wire.State{State: wire.StateStopped, Reason: "solib-event", Frame: wire.Frame{Func: "??"}}
		b.setState(st)
		b.emit(wire.EventStopped, wire.MustEncode(st))
	}
}

// continueQuietly continues a stopped process without the running event
// its *running record would otherwise bring.
func (b *Backend) continueQuietly(g conn) error {
	b.mu.Lock()
	b.quietRuns++
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, _, err := g.Run(ctx, "-exec-continue"); err != nil {
		b.mu.Lock()
		b.quietRuns--
		b.mu.Unlock()
		return err
	}
	return nil
}

// plant is OpPlant: read the new libraries' symbols, and let a rank held
// at a load go on.
func (b *Backend) plant(g conn) (wire.State, error) {
	b.mu.Lock()
	held, st, unread := b.held, b.state, b.unread
	b.mu.Unlock()
	if !held {
		// Nothing waits for this answer (the user let the rank go on, or
		// it was never held); a stopped rank still gets its libraries read.
		if st.State == wire.StateStopped && unread {
			if err := b.readSymbols(g); err != nil {
				return wire.State{}, err
			}
		}
		return st, nil
	}
	readErr := b.readSymbols(g)
	if err := b.settle(g); err != nil {
		return wire.State{}, err
	}
	// The rank counted as running all along: its going on is no news.
	running := wire.State{State: wire.StateRunning}
	if err := b.letGo(func() error { return b.continueQuietly(g) }, running); err != nil {
		return wire.State{}, err
	}
	if readErr != nil {
		return wire.State{}, fmt.Errorf("%w (the rank went on)", readErr)
	}
	return running, nil
}

// letGo sets a stopped process going, by start, the one way every command
// does (a resume, the answer to a reported load): the hold at a load ends
// before the process goes on, since the next load may hold it again
// before start returns, and that hold must stand; should gdb refuse, the
// hold stands as it was. Unless gdb has reported something since (the
// running, or even the next stop), the state becomes running here, so
// that a status asked right after the answer does not see the old stop.
func (b *Backend) letGo(start func() error, running wire.State) error {
	b.mu.Lock()
	// A stop announced before is not news after the start: its state
	// is set first.
	if err := b.announced(); err != nil {
		b.mu.Unlock()
		return err
	}
	reported, held := b.reported, b.held
	b.held = false
	b.mu.Unlock()
	if err := start(); err != nil {
		b.mu.Lock()
		if b.reported == reported {
			b.held = held
		}
		b.mu.Unlock()
		return err
	}
	b.mu.Lock()
	if b.reported == reported {
		b.state = running
		b.report()
	}
	b.mu.Unlock()
	return nil
}

// Dlopen implements backend.Ops: change the setting (an empty one only
// asks) and say how it stands. It works before there is a gdb too: the
// setting applies from the start. A process that runs gets the new gdb
// settings at once, so the change counts from the next load.
func (b *Backend) Dlopen(_ context.Context, d wire.Dlopen) (wire.Dlopen, error) {
	b.mu.Lock()
	s := b.dl
	b.mu.Unlock()
	s, err := s.Apply(d)
	if err != nil {
		return wire.Dlopen{}, err
	}
	b.mu.Lock()
	changed := s.String() != b.dl.String()
	b.dl = s
	if changed {
		b.cudaWarned = false
	}
	warning := ""
	if b.cuda != "" && s.LeavesOutCUDA(b.cuda) {
		b.cudaWarned = true
		warning = s.CUDAWarning(b.cuda)
	}
	running := b.state.State == wire.StateRunning && !b.held
	g := b.gdb
	b.mu.Unlock()
	if running && g != nil {
		if err := b.settle(g); err != nil {
			return wire.Dlopen{}, err
		}
	}
	return s.Answer(warning), nil
}

// beforeResume prepares a stopped process to go on: the libraries it
// loaded since the last read are read, and gdb's settings made those of
// the mode for a command that steps, or not.
func (b *Backend) beforeResume(g conn, step bool) error {
	b.mu.Lock()
	read := b.unread && (b.state.State == wire.StateStopped || b.held)
	b.stepping = step
	b.mu.Unlock()
	if read {
		if err := b.readSymbols(g); err != nil {
			return err
		}
	}
	return b.settle(g)
}

// libraries lists the libraries of an added or removed field: names in
// gdb 13, tuples with a target-name in later versions.
func libraries(v Value) []string {
	var out []string
	for _, item := range v.Items() {
		switch {
		case item.Kind == String:
			out = append(out, item.Str)
		case item.Has("target-name"):
			out = append(out, item.S("target-name"))
		case item.Has("id"):
			out = append(out, item.S("id"))
		}
	}
	return out
}
