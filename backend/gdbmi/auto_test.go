package gdbmi_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// loadStops runs examples/dlopen with args to its end in a fresh rank set
// up by prepare, and says how often a load stopped the process.
func loadStops(t *testing.T, prepare func(r *rank), args ...string) int {
	t.Helper()
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(testenv.Examples(t), "dlopen"), args...)
	prepare(r)
	r.must(wire.OpRun, nil, nil)
	s := r.until(wire.EventExited, nil)
	if len(s.loads) != 0 || s.last.Code != 0 {
		t.Fatalf("loads reported %v, exit %+v", s.names(), s.last)
	}
	return gdbmi.LoadStops(r.b)
}

// Auto is the default, and with no breakpoint pending a load stops the
// process no more often than in fast mode: only at the program's start.
// A breakpoint that never resolves makes every load stop.
func TestDlopenAutoNoPending(t *testing.T) {
	const loads = "10"
	fast := loadStops(t, func(r *rank) { r.dlopen("fast", "") }, loads)
	auto := loadStops(t, func(r *rank) {
		if d := r.dlopen("", ""); d.Mode != "auto" {
			t.Fatalf("default setting: %+v", d)
		}
		// In the program: planted, not pending; counted, never stopped at.
		r.must(wire.OpBreak, wire.Break{Location: "loaded", Ignore: 100}, nil)
	}, loads)
	pending := loadStops(t, func(r *rank) {
		r.must(wire.OpBreak, wire.Break{Location: "no_such_function"}, nil)
	}, loads)
	if auto != fast || pending < fast+10 {
		t.Fatalf("stops at loads: auto %d, fast %d, auto with a breakpoint pending %d", auto, fast, pending)
	}
	t.Logf("stops at loads: auto %d, fast %d, auto with a breakpoint pending %d", auto, fast, pending)
}

// A pending breakpoint in a library loaded at run time is planted at the
// load by the rank itself, without a report, and hit at the first call;
// once it is planted, loads no longer stop.
func TestDlopenAutoPending(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "3")
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "plugin_function"}, &bp)
	if !bp.Pending {
		t.Fatalf("break before the load: %+v", bp)
	}
	r.must(wire.OpRun, nil, nil)
	s := r.until(wire.EventStopped, nil)
	stoppedIn(t, s.last, "plugin_function")
	if len(s.loads) != 0 {
		t.Fatalf("loads reported: %v", s.names())
	}
	if got := r.raw("show stop-on-solib-events"); !strings.Contains(got, "is 0") {
		t.Fatalf("loads still stop with no breakpoint pending: %q", got)
	}
	if got := r.print("x"); got != "21" {
		t.Fatalf("x = %s", got)
	}
}

// After the pending breakpoint is planted, at the first of several
// libraries that define its function, the later ones are not read at
// their loads: the breakpoint traps the first library's call only. (Slow
// mode reads every one, and traps every call.)
func TestDlopenAutoStopsOnceResolved(t *testing.T) {
	bin := testenv.Examples(t)
	for _, c := range []struct{ mode, hits string }{
		{"auto", "already hit 1 time"},
		{"slow", "already hit 3 times"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := newRank(t, 0, 1, "")
			r.start(filepath.Join(bin, "dlopen"), "3")
			r.dlopen(c.mode, "")
			// Counted, never stopped at.
			r.must(wire.OpBreak, wire.Break{Location: "gen_function", Ignore: 100}, nil)
			r.must(wire.OpRun, nil, nil)
			s := r.until(wire.EventExited, nil)
			if s.last.Code != 0 || s.stops != 0 {
				t.Fatalf("run: %+v", s)
			}
			if got := r.raw("info breakpoints"); !strings.Contains(got, c.hits) {
				t.Fatalf("breakpoint on gen_function: want %q in\n%s", c.hits, got)
			}
		})
	}
}

// Auto with a list reports the loads of matching libraries to the front
// end, as medium does, and reads the others itself while a breakpoint is
// pending.
func TestDlopenAutoMatch(t *testing.T) {
	stopsInPlugin(t, "auto", "libplugin.so")
}

// A breakpoint set while the process runs makes the next load stop, so
// that it is planted there.
func TestDlopenAutoBreakWhileRunning(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "-w", "1")
	r.must(wire.OpRun, nil, nil)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.output.String(), "waiting in ") {
		if time.Now().After(deadline) {
			t.Fatalf("the program did not say it waits: %q", r.output.String())
		}
		r.until(wire.EventOutput, nil)
	}
	_, rest, _ := strings.Cut(r.output.String(), "waiting in ")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.raw("show stop-on-solib-events"); !strings.Contains(got, "is 0") {
		t.Fatalf("loads stop with no breakpoint pending: %q", got)
	}
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "plugin_function"}, &bp)
	if !bp.Pending {
		t.Fatalf("break while running: %+v", bp)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	s := r.until(wire.EventStopped, nil)
	stoppedIn(t, s.last, "plugin_function")
	if len(s.loads) != 0 {
		t.Fatalf("loads reported: %v", s.names())
	}
}
