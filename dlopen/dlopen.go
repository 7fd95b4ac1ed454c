// Package dlopen holds the setting that decides what a rank's debugger
// does when the program loads a shared library (TotalView's dlopen event
// filtering, and sdm's own auto mode): the mode, the glob list that medium
// and auto mode report, their parsing, the matching of a library against
// the list, the decisions that follow from a setting, and the seed's two
// environment variables.
//
// A setting enters as flags, environment variables or a console command,
// travels to the rank servers as a wire.Dlopen body, and is applied by
// each rank's backend.
//
// # The setting
//
// The modes are auto, slow, medium with a glob list, and fast. The front
// end resolves the setting from --dlopen-mode, --dlopen-match and the
// seed's variables SDM_DLOPEN_ALWAYS_RECALCULATE and
// SDM_DLOPEN_RECALCULATE_ON_MATCH (each flag wins over its variable; with
// neither flag nor the first variable the mode is auto), and sends it to
// every rank (dlopen op) before start, or after an attach; the console's
// set dlopen sends it to any rank set later. Servers start in auto.
//
// # Who reads symbols
//
// gdb never reads a library's symbols on its own (auto-solib-add off);
// reading them is what a load costs gdb, and what plants the pending
// breakpoints in the library. The backend (backend/gdbmi, solib.go) has
// gdb read (sharedlibrary) every library not read yet:
//
//  1. at the program's first load that adds libraries, which is the
//     dynamic linker loading what the program is linked with, and at an
//     attach: in every mode, so a breakpoint in a library the program is
//     linked with always works;
//  2. when the front end answers a reported load (plant op);
//  3. in auto mode, at a load that stops the process because a breakpoint
//     is pending: the rank server reads it itself (below);
//  4. at every stop it reports, before reporting it (and it then asks gdb
//     for the stop's frame again, which may lie in a library just read);
//  5. before it lets a stopped process go on.
//
// # Who stops
//
// stop-on-solib-events 1 in slow and medium mode: gdb stops the process at
// each load with reason solib-event and the libraries added. The backend
// lets a stop go on at once, and says nothing (its *running is no news),
// when it adds nothing (the linker's announcement before a load, an
// unload) or when the mode neither reports nor reads it (medium and a name
// that matches no pattern, by file name). A reported load holds the rank:
// a library-loaded event (the libraries' paths) goes up the tree, merging
// with the same load of other ranks, and the rank waits for plant (package
// client answers it: one round trip per group of ranks). Its status
// meanwhile is running, reason library-loaded: it goes on without the
// user, so wait waits for it, and halt still works (the SIGINT is
// delivered when it goes on). In fast mode stop-on-solib-events 0: gdb
// traps the load in the dynamic linker to keep its list of libraries and
// lets the process go on, with only a =library-loaded notification, which
// the backend notes as unread.
//
// # Auto
//
// Auto is fast, except while a breakpoint is pending (enabled, and waiting
// for a library not loaded yet: gdb's pending field). The backend lists
// the breakpoints (-break-list) whenever it works out gdb's load settings,
// in auto mode only and once the start-up libraries are read: when the
// process is about to go on (continue, a step, run's start-up load,
// plant), at a load it read, at a change of setting, and after every
// command that may add, remove, enable or disable a breakpoint (break,
// delete, enable, disable, gdb …) while the process runs, since the next
// load must then stop, or no longer. The list and the change of settings
// happen under one lock, so that of two such moments, the watcher's at a
// load and a command's, the later one sees the later list.
//
// While one is pending, stop-on-solib-events 1; a load that adds libraries
// is then read by the rank server itself, which plants the breakpoint if
// it is in them, lists the breakpoints again, turns the stops off when none
// is pending any more, and lets the process go on, all before the
// library's code runs and without a word to the front end. A round trip,
// as slow makes, would buy nothing here: the front end's only part in a
// load is to print it and have the rank read it, and the breakpoint needs
// only the read; the round trip would cost each load the event window at
// every level of the tree. The cost is a stop per load and its read while
// the breakpoint waits (a breakpoint that never resolves keeps it for the
// whole run). Once it is planted, a library loaded later is not read at
// its load, so a breakpoint on a function that several libraries define
// gains their locations at the next stop, as in fast mode.
//
// With a glob list, auto stops at every load, since a name can be checked
// only at a stopped load, and reports matching ones as medium does (gdb's
// catch load REGEX would stop only at matching loads, but it is a
// breakpoint: it would take a number from the user's). Without a pending
// breakpoint or a list, auto's gdb settings are fast's, and its only extra
// work is one -break-list each time the process goes on.
//
// # Steps
//
// A load that stops a step, next or finish ends it, and gdb cannot resume
// it. So while a step runs, loads never stop the process; where the mode
// would have stopped it (slow, medium, auto with a breakpoint pending or a
// list) gdb reads each new library itself during the step (auto-solib-add
// on), so a breakpoint in it is hit within the step, and the settings of
// the mode come back at the next continue. A change of mode while the
// process runs goes to gdb at once (gdb takes these settings while the
// process runs) and counts from the next load; a rank held at a load takes
// it when it goes on.
//
// # The modes side by side
//
// For each mode: gdb's settings between steps; which loads stop the
// process; which reach the front end; when breakpoints in the new library
// are planted; what is given up.
//
//   - auto: fast's settings; while a breakpoint is pending, or with a
//     list, stop-on-solib-events 1. A load stops the process while a
//     breakpoint is pending, and with a list every one does. Only those
//     matching the list reach the front end. Pending breakpoints are
//     planted at the load, read by the rank server; others at the next
//     stop. Given up: a planted breakpoint's locations in later libraries
//     until the next stop; a stop and a read per load while a breakpoint
//     is pending.
//   - slow: stop-on-solib-events 1, auto-solib-add off. Every load stops
//     the process, and every one that adds a library reaches the front
//     end: one round trip per group of ranks. Breakpoints are planted at
//     the load, by the front end's plant. Given up: speed, since each load
//     waits for the front end.
//   - medium: the same settings. Every load stops the process; only those
//     matching the list reach the front end, the rank server lets the
//     others go on. Matching: planted at the load; others at the next
//     stop. Given up: breakpoints in unmatched libraries until the next
//     stop; a stop per load, at the rank server.
//   - fast: stop-on-solib-events 0, auto-solib-add off. A load stops the
//     process only inside gdb, for an instant, and none reaches the front
//     end. Breakpoints are planted at the next stop for another reason.
//     Given up: a call into a new library before the next stop goes by its
//     breakpoints; no front end learns of a load (CUDA needs slow, or
//     medium or auto with libcuda.so*).
//
// # CUDA
//
// In medium mode, and in auto with a list, a rank that loads libcuda.so*
// while its list does not match it sends a warning event once per setting,
// and the answer to a set dlopen that still leaves it out carries the same
// warning: a CUDA-aware debugger must see that load.
package dlopen

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Mode says which library loads stop the process and reach the front end.
type Mode string

// The modes: TotalView's three, and auto.
const (
	// Auto stops the process at a load only when the load could matter:
	// while a breakpoint is pending (waits for a library not loaded yet),
	// when the rank's own debugger reads the new library, which plants the
	// breakpoint, and lets the process go on without asking the front end;
	// and, with a glob list, to report the loads of matching libraries as
	// medium does. Otherwise it is fast.
	Auto Mode = "auto"
	// Slow stops the process at every load that adds a library and
	// reports it to the front end, which has the debugger read the new
	// libraries' symbols (planting pending breakpoints there) and go on.
	Slow Mode = "slow"
	// Medium stops the process at every load, but reports only libraries
	// that match the glob list; the rank server lets the others go on at
	// once, and their breakpoints are planted at the next reported stop.
	Medium Mode = "medium"
	// Fast never stops the process for a load; breakpoints in new
	// libraries are planted at the next stop for another reason.
	Fast Mode = "fast"
)

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case Auto, Slow, Medium, Fast:
		return m, nil
	}
	return "", fmt.Errorf("dlopen mode %q: want auto, slow, medium or fast", s)
}

// Setting is a mode and its glob list. The list is kept in every mode, so
// that switching modes and back loses nothing; only medium and auto use
// it.
type Setting struct {
	Mode  Mode
	Match Match
}

// Default is the setting of a session that asks for nothing: auto. A
// pending breakpoint is planted at its library's load, as in slow mode,
// which is what people expect of one; but a load that no breakpoint waits
// for costs what it costs in fast mode. An MPI library loads tens of
// components at every start (Open MPI its mca_*.so), none of which most
// sessions have a breakpoint in: slow stopped every rank at each of them
// and had the front end answer, which made a start up to twice as slow
// and printed a line per component.
func Default() Setting { return Setting{Mode: Auto} }

// Reports says whether a load that added library goes to the front end.
func (s Setting) Reports(library string) bool {
	switch s.Mode {
	case Slow:
		return true
	case Medium, Auto:
		return s.Match.Matches(library)
	}
	return false
}

// Stops says whether loads stop the process; pending says whether an
// enabled breakpoint waits for a library that is not loaded yet. Slow and
// medium stop at every load, fast at none; auto stops while a breakpoint
// is pending, and at every load when it has a list, since a library's
// name is known only once its load has stopped the process.
func (s Setting) Stops(pending bool) bool {
	switch s.Mode {
	case Slow, Medium:
		return true
	case Auto:
		return pending || !s.Match.Empty()
	}
	return false
}

// ReadsAtLoad says whether the rank's debugger reads a new library's
// symbols itself at a load that stops the process and is not reported:
// in auto mode while a breakpoint is pending, so that the breakpoint is
// planted before the library's code runs. No round trip to the front end
// is needed for that, since nothing but the breakpoint uses the load.
func (s Setting) ReadsAtLoad(pending bool) bool { return s.Mode == Auto && pending }

// ReportsLoads says whether the setting reports library loads to the
// front end (slow, medium, or auto with a list), which only a debugger
// watching the process sees.
func (s Setting) ReportsLoads() bool {
	return s.Mode == Slow || s.Mode == Medium || s.Mode == Auto && !s.Match.Empty()
}

// WatchesPending says whether what a load does depends on the pending
// breakpoints (auto mode), which the rank must then keep track of.
func (s Setting) WatchesPending() bool { return s.Mode == Auto }

// String describes the setting as the console shows it.
func (s Setting) String() string {
	text := string(s.Mode)
	if !s.Match.Empty() {
		text += " " + s.Match.String()
	}
	return text
}

// Match is a glob list: library file names, each of which may end in *
// to match every name that begins with the rest ("libcuda.so*").
type Match struct {
	patterns []string // in the order given, each with its * if it has one
}

// ParseMatch reads a colon-separated glob list, such as
// "libcuda.so*:libmine.so". An empty string is the empty list, which
// matches nothing. Spaces around a pattern are ignored; anything that
// would not match the way a reader expects is refused: empty patterns,
// paths, a * that is not last, and the other glob characters.
func ParseMatch(s string) (Match, error) {
	if strings.TrimSpace(s) == "" {
		return Match{}, nil
	}
	var m Match
	for i, p := range strings.Split(s, ":") {
		p = strings.TrimSpace(p)
		if err := checkPattern(p); err != nil {
			return Match{}, fmt.Errorf("dlopen match list %q: pattern %d: %w", s, i+1, err)
		}
		m.patterns = append(m.patterns, p)
	}
	return m, nil
}

func checkPattern(p string) error {
	if p == "" {
		return fmt.Errorf("empty (patterns are separated by single colons)")
	}
	if strings.ContainsRune(p, '/') {
		return fmt.Errorf("%q is a path: patterns match a library's file name, such as libcuda.so*", p)
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
		return fmt.Errorf("%q: * may only end a pattern (it matches names that begin with the rest)", p)
	}
	for _, r := range p {
		switch {
		case r == '?' || r == '[' || r == ']' || r == '\\':
			return fmt.Errorf("%q: %q is not supported: only a final * is", p, r)
		case r <= ' ' || r == 0x7f:
			return fmt.Errorf("%q: contains a space or control character", p)
		}
	}
	return nil
}

// Matches says whether library (a path or a file name) matches a
// pattern of the list, by its file name.
func (m Match) Matches(library string) bool {
	name := filepath.Base(library)
	for _, p := range m.patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == p {
			return true
		}
	}
	return false
}

// Empty says whether the list has no pattern.
func (m Match) Empty() bool { return len(m.patterns) == 0 }

// String is the list as ParseMatch reads it.
func (m Match) String() string { return strings.Join(m.patterns, ":") }

// CUDA is the pattern of the CUDA driver library. A debugger that follows
// CUDA kernels must see that library load, so medium mode's list should
// hold it whenever the program uses CUDA.
const CUDA = "libcuda.so*"

// LeavesOutCUDA says whether library is the CUDA driver and the setting
// has a list that does not report its load: medium, or auto with a list.
// (Fast mode reports no load at all, by choice, and so does auto without
// a list; slow reports every one.)
func (s Setting) LeavesOutCUDA(library string) bool {
	listed := s.Mode == Medium || s.Mode == Auto && !s.Match.Empty()
	return listed && IsCUDA(library) && !s.Match.Matches(library)
}

// IsCUDA says whether library is the CUDA driver (matches CUDA).
func IsCUDA(library string) bool {
	return Match{patterns: []string{CUDA}}.Matches(library)
}

// CUDAWarning is what a rank says when LeavesOutCUDA holds.
func (s Setting) CUDAWarning(library string) string {
	list := CUDA
	if !s.Match.Empty() {
		list = s.Match.String() + ":" + CUDA
	}
	return fmt.Sprintf("%s is loaded, but dlopen %s does not report it (its list is %q): CUDA debugging needs that load reported; set dlopen %s %s", library, s.Mode, s.Match.String(), s.Mode, list)
}
