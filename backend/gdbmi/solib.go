package gdbmi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/wire"
)

// Libraries the program loads, by the dlopen setting (package dlopen).
//
// gdb never reads a library's symbols on its own (auto-solib-add off):
// that is what a load costs gdb, and what plants pending breakpoints. The
// backend has it read them (the sharedlibrary command) at four moments:
//
//   - when the program starts, for the libraries it is linked with (the
//     dynamic linker's first load), and when gdb attaches, for those
//     loaded already: in every mode, so that a breakpoint in a library the
//     program is linked with always works;
//   - when the front end answers a reported load (OpPlant);
//   - at every stop it reports, before it reports it, so that the stop's
//     frame and every command after it see the new libraries;
//   - before it lets a stopped process go on.
//
// Whether a load stops the process is stop-on-solib-events: on in slow and
// medium mode (gdb stops with reason solib-event, naming the libraries
// added), off in fast mode, where gdb still traps each load in the dynamic
// linker to keep its list of libraries, and lets the process go on at once.
// A stop at a load the mode does not report, or one that adds nothing (the
// linker's announcements before a load, an unload), is let go here without
// a word. A reported one holds the rank until the front end's OpPlant.
//
// A step (step, next, finish) that a load stopped could not be resumed: gdb
// drops it. While a step runs, loads do not stop the process; in slow and
// medium mode gdb reads each new library itself (auto-solib-add on), so
// that a breakpoint in it is still hit within the step.

// solibVars are the gdb settings that decide what a load does.
type solibVars struct {
	stop bool // stop-on-solib-events
	auto bool // auto-solib-add
}

// wantedVars returns the settings for a process that is about to go on:
// before its start-up libraries are read, every load stops; then it is up
// to the mode, and to whether the process steps.
func wantedVars(s dlopen.Setting, started, step bool) solibVars {
	switch {
	case !started:
		return solibVars{stop: true}
	case step:
		return solibVars{auto: s.Mode != dlopen.Fast}
	}
	return solibVars{stop: s.Stops()}
}

// symbolTimeout bounds a read of libraries' symbols, which for a large
// library with full debug information takes seconds.
const symbolTimeout = 5 * time.Minute

// setSolib changes gdb's settings to v where they differ. gdb takes them
// while the process runs, and applies them from the next load on.
func (b *Backend) setSolib(g *GDB, v solibVars) error {
	b.solibMu.Lock()
	defer b.solibMu.Unlock()
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
func (b *Backend) readSymbols(g *GDB) error {
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
func (b *Backend) solibStop(g *GDB, res Value) {
	added := libraries(res.Get("added"))
	b.mu.Lock()
	startup := b.attaching || !b.started
	report := false
	for _, lib := range added {
		report = report || b.dl.Reports(lib)
	}
	report = report && !startup
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
		v := wantedVars(b.dl, true, false)
		b.mu.Unlock()
		if err := b.setSolib(g, v); err != nil {
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
func (b *Backend) goOnQuietly(g *GDB) {
	if err := b.continueQuietly(g); err != nil {
		b.mu.Lock()
		gone := b.state.State == wire.StateExited || b.pid == 0
		b.mu.Unlock()
		if gone || strings.Contains(err.Error(), "running") {
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
func (b *Backend) continueQuietly(g *GDB) error {
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
func (b *Backend) plant(g *GDB) ([]byte, error) {
	b.mu.Lock()
	held, st, unread := b.held, b.state, b.unread
	b.mu.Unlock()
	if !held {
		// Nothing waits for this answer (the user let the rank go on, or
		// it was never held); a stopped rank still gets its libraries read.
		if st.State == wire.StateStopped && unread {
			if err := b.readSymbols(g); err != nil {
				return nil, err
			}
		}
		return wire.Encode(st)
	}
	readErr := b.readSymbols(g)
	b.mu.Lock()
	v := wantedVars(b.dl, b.started, false)
	b.mu.Unlock()
	if err := b.setSolib(g, v); err != nil {
		return nil, err
	}
	// The hold ends before the process goes on: the next load may hold it
	// again before continueQuietly returns, and that hold must stand.
	b.mu.Lock()
	reported := b.reported
	b.held = false
	b.mu.Unlock()
	if err := b.continueQuietly(g); err != nil {
		b.mu.Lock()
		if b.reported == reported {
			b.held = true // still stopped at the load
		}
		b.mu.Unlock()
		return nil, err
	}
	running := wire.State{State: wire.StateRunning}
	b.mu.Lock()
	if b.reported == reported {
		b.state = running
		b.report()
	}
	b.mu.Unlock()
	if readErr != nil {
		return nil, fmt.Errorf("%w (the rank went on)", readErr)
	}
	return wire.Encode(running)
}

// setDlopen is OpDlopen: change the setting (an empty body only asks) and
// say how it stands. A process that runs gets the new gdb settings at
// once, so the change counts from the next load.
func (b *Backend) setDlopen(body []byte) ([]byte, error) {
	b.mu.Lock()
	s := b.dl
	b.mu.Unlock()
	if len(body) > 0 {
		var d wire.Dlopen
		if err := wire.Decode(body, &d); err != nil {
			return nil, err
		}
		var err error
		if s, err = s.Apply(d); err != nil {
			return nil, err
		}
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
	v := wantedVars(s, b.started, b.stepping)
	g := b.gdb
	b.mu.Unlock()
	if running && g != nil {
		if err := b.setSolib(g, v); err != nil {
			return nil, err
		}
	}
	return wire.Encode(s.Answer(warning))
}

// beforeResume prepares a stopped process to go on: the libraries it
// loaded since the last read are read, and gdb's settings made those of
// the mode for a command that steps, or not.
func (b *Backend) beforeResume(g *GDB, step bool) error {
	b.mu.Lock()
	read := b.unread && (b.state.State == wire.StateStopped || b.held)
	b.stepping = step
	v := wantedVars(b.dl, b.started, step)
	b.mu.Unlock()
	if read {
		if err := b.readSymbols(g); err != nil {
			return err
		}
	}
	return b.setSolib(g, v)
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
