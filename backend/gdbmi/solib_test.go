package gdbmi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// seen is what a rank reported on the way to an event.
type seen struct {
	loads    [][]string // the libraries of each reported load, in order
	warnings []string
	stops    int        // stopped events, the one waited for included
	last     wire.State // the state of the event waited for
}

// names are the file names of the libraries of every reported load.
func (s seen) names() []string {
	var out []string
	for _, l := range s.loads {
		for _, lib := range l {
			out = append(out, filepath.Base(lib))
		}
	}
	return out
}

// until collects events until one called op, and the output on the way.
// Each reported load is
// handed to onLoad, which must answer it (with OpPlant) as the front end
// would; nil answers at once.
func (r *rank) until(op string, onLoad func(libs []string)) seen {
	r.t.Helper()
	var s seen
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-r.b.Events():
			if !ok {
				r.t.Fatalf("events closed while waiting for %s", op)
			}
			switch ev.Op {
			case wire.EventOutput:
				var o wire.Output
				wire.Decode(ev.Body, &o)
				r.output.WriteString(o.Text)
			case wire.EventLoaded:
				var l wire.Loaded
				if err := wire.Decode(ev.Body, &l); err != nil {
					r.t.Fatal(err)
				}
				s.loads = append(s.loads, l.Libraries)
				if onLoad != nil {
					onLoad(l.Libraries)
				} else {
					r.must(wire.OpPlant, nil, nil)
				}
			case wire.EventWarning:
				s.warnings = append(s.warnings, string(ev.Body))
			case wire.EventStopped:
				s.stops++
			}
			if ev.Op == op {
				if len(ev.Body) > 0 {
					wire.Decode(ev.Body, &s.last)
				}
				return s
			}
		case <-deadline:
			r.t.Fatalf("no %s event within 30s", op)
		}
	}
}

func (r *rank) dlopen(mode, match string) wire.Dlopen {
	r.t.Helper()
	var d wire.Dlopen
	r.must(wire.OpDlopen, wire.Dlopen{Mode: mode, Match: match, SetMatch: true}, &d)
	return d
}

// breakpoint returns breakpoint n as the rank lists it.
func (r *rank) breakpoint(n int) wire.Breakpoint {
	r.t.Helper()
	var list []wire.Breakpoint
	r.must(wire.OpBreakList, nil, &list)
	for _, bp := range list {
		if bp.Number == n {
			return bp
		}
	}
	r.t.Fatalf("no breakpoint %d in %+v", n, list)
	return wire.Breakpoint{}
}

// raw runs a gdb CLI command and returns what it printed.
func (r *rank) raw(cmd string) string {
	r.t.Helper()
	var out wire.Text
	r.must(wire.OpRaw, wire.Text{Text: cmd}, &out)
	return out.Text
}

func stoppedIn(t *testing.T, st wire.State, fn string) {
	t.Helper()
	if st.State != wire.StateStopped || st.Frame.Func != fn {
		t.Fatalf("want a stop in %s, got %+v", fn, st)
	}
}

// Slow: every load that adds a library stops the process and is
// reported, the program's start-up libraries excepted; the breakpoint in
// the library is planted at the front end's answer and hit at the first
// call.
func TestDlopenSlow(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "3")
	r.dlopen("slow", "")
	r.must(wire.OpBreak, wire.Break{Location: "plugin_function"}, nil)
	r.must(wire.OpRun, nil, nil)
	var held wire.State
	s := r.until(wire.EventStopped, func([]string) {
		r.must(wire.OpStatus, nil, &held)
		r.must(wire.OpPlant, nil, nil)
	})
	stoppedIn(t, s.last, "plugin_function")
	if got := strings.Join(s.names(), " "); got != "libgen-0000.so libgen-0001.so libgen-0002.so libplugin.so" {
		t.Fatalf("loads reported: %s", got)
	}
	if held.State != wire.StateRunning || held.Reason != wire.ReasonLoad {
		t.Fatalf("status while held at a load: %+v", held)
	}
	if got := r.print("x"); got != "21" {
		t.Fatalf("x = %s", got)
	}
}

// Loads back to back, each answered at once: the next load may hold the
// rank again before the answer to the last one has returned, and every
// hold must reach the front end and be answered.
func TestDlopenSlowBackToBack(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "-c", "200")
	r.dlopen("slow", "")
	r.must(wire.OpRun, nil, nil)
	s := r.until(wire.EventExited, nil)
	if len(s.loads) != 201 || s.last.Code != 0 {
		t.Fatalf("%d loads reported, exit %+v", len(s.loads), s.last)
	}
}

// stopsInPlugin runs examples/dlopen in mode with the match list and a
// breakpoint in its plugin: the plugin's load, and only it, is reported,
// and the rank stops at the breakpoint.
func stopsInPlugin(t *testing.T, mode, match string) *rank {
	t.Helper()
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(testenv.Examples(t), "dlopen"), "3")
	if d := r.dlopen(mode, match); d.Mode != mode || d.Match != match || d.Warning != "" {
		t.Fatalf("set: %+v", d)
	}
	r.must(wire.OpBreak, wire.Break{Location: "plugin_function"}, nil)
	r.must(wire.OpRun, nil, nil)
	s := r.until(wire.EventStopped, nil)
	stoppedIn(t, s.last, "plugin_function")
	if got := strings.Join(s.names(), " "); got != "libplugin.so" {
		t.Fatalf("loads reported: %q", got)
	}
	return r
}

// Medium: every load stops, but only one matching the list is reported;
// the breakpoint in that library is hit at its first call.
func TestDlopenMediumMatch(t *testing.T) {
	r := stopsInPlugin(t, "medium", "libcuda.so*:libplug*")
	if got := r.raw("show stop-on-solib-events"); !strings.Contains(got, "is 1") {
		t.Fatalf("medium does not stop at loads: %q", got)
	}
}

// Medium with a list that matches nothing, and fast, report no load. The
// breakpoint in the library is planted at the next stop for another
// reason, and hit after it; without such a stop the call goes by.
func TestDlopenUnreported(t *testing.T) {
	bin := testenv.Examples(t)
	for _, c := range []struct{ mode, match, stops string }{
		{"medium", "libnothing.so", "is 1"},
		{"fast", "", "is 0"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := newRank(t, 0, 1, "")
			r.start(filepath.Join(bin, "dlopen"), "3")
			r.dlopen(c.mode, c.match)
			r.must(wire.OpBreak, wire.Break{Location: "plugin_function"}, nil)
			r.must(wire.OpBreak, wire.Break{Location: "loaded"}, nil)
			r.must(wire.OpRun, nil, nil)
			s := r.until(wire.EventStopped, nil)
			stoppedIn(t, s.last, "loaded")
			if len(s.loads) != 0 {
				t.Fatalf("loads reported: %v", s.names())
			}
			// The stop read the new libraries: the breakpoint is planted.
			if bp := r.breakpoint(1); bp.Pending || bp.Func != "plugin_function" {
				t.Fatalf("after the stop: %+v", bp)
			}
			if got := r.raw("show stop-on-solib-events"); !strings.Contains(got, c.stops) {
				t.Fatalf("stop-on-solib-events: %q, want %q", got, c.stops)
			}
			r.must(wire.OpCont, nil, nil)
			stoppedIn(t, r.until(wire.EventStopped, nil).last, "plugin_function")

			// No stop between the load and the call: the call goes by.
			r.must(wire.OpDelete, wire.IDs{IDs: []int{2}}, nil)
			r.must(wire.OpRun, nil, nil)
			s = r.until(wire.EventExited, nil)
			if len(s.loads) != 0 || s.stops != 0 || s.last.Code != 0 {
				t.Fatalf("run without a stop: %+v", s)
			}
		})
	}
}

// A change of mode counts from the next load: one made while the rank is
// held at a load (running, for the user), and one made at a stop.
func TestDlopenModeChange(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "3")
	r.dlopen("fast", "")
	r.must(wire.OpBreak, wire.Break{Location: "main"}, nil)
	r.must(wire.OpBreak, wire.Break{Location: "loaded"}, nil)
	r.must(wire.OpRun, nil, nil)
	stoppedIn(t, r.until(wire.EventStopped, nil).last, "main")

	// At a stop: slow from the next load on.
	r.dlopen("slow", "")
	r.must(wire.OpCont, nil, nil)
	first := true
	s := r.until(wire.EventStopped, func([]string) {
		if first {
			// Held at the first load: medium, reporting the plugin only.
			first = false
			if d := r.dlopen("medium", "libplugin.so"); d.Mode != "medium" {
				t.Errorf("set while held: %+v", d)
			}
		}
		r.must(wire.OpPlant, nil, nil)
	})
	stoppedIn(t, s.last, "loaded")
	if got := strings.Join(s.names(), " "); got != "libgen-0000.so libplugin.so" {
		t.Fatalf("loads reported: %s", got)
	}
}

// A step over a load is not cut short by it: loads do not stop a step,
// and in slow mode gdb reads the new library during the step.
func TestDlopenStepOverLoad(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "1")
	r.dlopen("slow", "")
	r.must(wire.OpBreak, wire.Break{Location: "load"}, nil)
	r.must(wire.OpRun, nil, nil)
	st := r.until(wire.EventStopped, nil).last
	stoppedIn(t, st, "load")
	r.must(wire.OpNext, wire.Count{N: 1}, nil)
	s := r.until(wire.EventStopped, nil)
	if s.last.Reason != "end-stepping-range" || s.last.Frame.Func != "load" || s.last.Frame.Line != st.Frame.Line+1 {
		t.Fatalf("next over dlopen from %+v: %+v", st, s.last)
	}
	if len(s.loads) != 0 {
		t.Fatalf("a load reported during the step: %v", s.names())
	}
	if got := r.raw("info sharedlibrary libgen-0000"); !strings.Contains(got, "Yes") {
		t.Fatalf("the library loaded during the step was not read: %q", got)
	}
	// After the step, loads are reported again.
	r.must(wire.OpDelete, wire.IDs{IDs: []int{1}}, nil)
	r.must(wire.OpCont, nil, nil)
	if s := r.until(wire.EventExited, nil); strings.Join(s.names(), " ") != "libplugin.so" {
		t.Fatalf("loads after the step: %v", s.names())
	}
}

// The CUDA driver loaded while medium's list leaves it out is warned
// about, at the load and in the answer to a setting that still leaves it
// out.
func TestDlopenCUDAWarning(t *testing.T) {
	bin := testenv.Examples(t)
	cuda := filepath.Join(t.TempDir(), "libcuda.so.1")
	lib, err := os.ReadFile(filepath.Join(bin, "dlopen-libs", "libgen.so"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cuda, lib, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"), "0", cuda)
	r.dlopen("medium", "libplugin.so")
	r.must(wire.OpBreak, wire.Break{Location: "loaded"}, nil)
	r.must(wire.OpRun, nil, nil)
	s := r.until(wire.EventStopped, nil)
	if len(s.warnings) != 1 || !strings.Contains(s.warnings[0], cuda+" is loaded") || !strings.Contains(s.warnings[0], "set dlopen medium libplugin.so:libcuda.so*") {
		t.Fatalf("warnings: %q", s.warnings)
	}
	if d := r.dlopen("medium", "libmine.so"); !strings.Contains(d.Warning, "libcuda.so.1 is loaded") {
		t.Fatalf("set medium without libcuda: %+v", d)
	}
	if d := r.dlopen("medium", "libcuda.so*"); d.Warning != "" {
		t.Fatalf("set medium with libcuda: %+v", d)
	}
}

// A bad list is refused with the reason, and the setting stays as it was.
func TestDlopenRefusesBadList(t *testing.T) {
	r := newRank(t, 0, 1, "")
	r.dlopen("medium", "libcuda.so*")
	for _, d := range []wire.Dlopen{
		{Mode: "medium", Match: "libcuda.so*::libmine.so", SetMatch: true},
		{Mode: "medium", Match: "lib*mine.so", SetMatch: true},
		{Mode: "quick"},
	} {
		if _, err := r.do(wire.OpDlopen, d); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
	var d wire.Dlopen
	r.must(wire.OpDlopen, nil, &d)
	if d.Mode != "medium" || d.Match != "libcuda.so*" {
		t.Fatalf("after refusals: %+v", d)
	}
}
