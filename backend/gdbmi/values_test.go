package gdbmi_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/internal/debugregs"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// markedLine is the number of the first line of file that holds mark.
func markedLine(t *testing.T, file, mark string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), mark) {
			return n
		}
	}
	t.Fatalf("%s has no line with %q", file, mark)
	return 0
}

// valuesLine is the line of examples/values where its locals are all set.
func valuesLine(t *testing.T) string {
	return "values.cpp:" + strconv.Itoa(markedLine(t, filepath.Join("..", "..", "examples", "values", "values.cpp"), "the locals are set here"))
}

// Values as gdb's CLI shows them: a method returning a reference prints
// what it refers to, aggregates print whole among locals and arguments, a
// watchpoint's stop has the old and new values, a finish the value
// returned.
func TestValues(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "values"))
	r.must(wire.OpBreak, wire.Break{Location: valuesLine(t)}, nil)
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Frame.Func != "advance" {
		t.Fatalf("stop: %+v", st)
	}
	values := map[string]string{
		"domain":  "{m_cycle = 20}",
		"moved":   "{x = 2, y = 2.5}",
		"corners": "{0, 1, 2, 3}",
	}
	if testenv.InferiorCalls(t) {
		values["domain.cycle()"] = "20"
	}
	for expr, want := range values {
		if got := r.print(expr); got != want {
			t.Errorf("print %s: %q, want %q", expr, got, want)
		}
	}
	var locals, args []wire.Var
	r.must(wire.OpLocals, nil, &locals)
	got := map[string]string{}
	for i, v := range locals {
		got[v.Name] = v.Value
		if v.Index != i {
			t.Errorf("local %s has index %d, want %d", v.Name, v.Index, i)
		}
	}
	for name, want := range map[string]string{
		"n": "100", "half": "5", "corners": "{0, 1, 2, 3}", "moved": "{x = 2, y = 2.5}",
		"cells": "std::vector of length 3, capacity 3 = {100, 100, 100}",
	} {
		if got[name] != want {
			t.Errorf("locals: %s = %q, want %q (all: %+v)", name, got[name], want, locals)
		}
	}
	r.must(wire.OpArgs, nil, &args)
	if len(args) != 4 || args[0].Value != "{m_cycle = 20}" || args[1].Value != "{x = 1, y = 2.5}" {
		t.Errorf("args: %+v", args)
	}

	if r.watchRefused("steps") {
		r.must(wire.OpNext, nil, nil)
		r.event(wire.EventStopped)
	} else {
		r.must(wire.OpWatch, wire.Watch{Expr: "steps", Mode: "write"}, nil)
		r.must(wire.OpCont, nil, nil)
		if st := r.event(wire.EventStopped); st.Reason != "watchpoint-trigger" || st.Breakpoint != 2 || st.Old != "0" || st.New != "5" {
			t.Fatalf("watchpoint stop: %+v", st)
		}
	}
	if !debugregs.Work() {
		// gdb's software watchpoints tell a change in the thread it
		// was stepping as it saw it (here Open MPI's progress thread):
		// the finish is the main thread's.
		r.must(wire.OpThread, wire.Count{N: 1}, nil)
	}
	r.must(wire.OpFinish, nil, nil)
	if st := r.event(wire.EventStopped); st.Reason != "function-finished" || st.Frame.Func != "main" || st.Value != "42" {
		t.Fatalf("finish: %+v", st)
	}
}

// A breakpoint on a file the program does not have is an error that says
// so; one on a file of a library loaded later (its source on disk beside
// the program's) stays pending and is hit; a line the program's own file
// does not have is gdb's error.
func TestBreakOnAFile(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(bin, "dlopen"))
	if _, err := r.do(wire.OpBreak, wire.Break{Location: "nosuch.c:27"}); err == nil ||
		!strings.Contains(err.Error(), "no source file named nosuch.c in ") {
		t.Fatalf("break nosuch.c:27: %v, want an error", err)
	}
	// gdb 13 says "No line 100000 in file", gdb 16 "No compiled code for
	// line 100000 in file".
	if _, err := r.do(wire.OpBreak, wire.Break{Location: "dlopen.c:100000"}); err == nil ||
		!regexp.MustCompile(`No (compiled code for )?line 100000 in file`).MatchString(err.Error()) {
		t.Fatalf("break dlopen.c:100000: %v, want gdb's error", err)
	}
	line := markedLine(t, filepath.Join("..", "..", "examples", "dlopen", "plugin.c"), "return")
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "plugin.c:" + strconv.Itoa(line)}, &bp)
	if !bp.Pending {
		t.Fatalf("break in the plugin's file before its load: %+v", bp)
	}
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Frame.Func != "plugin_function" || st.Frame.Line != line {
		t.Fatalf("stop in the plugin: %+v", st)
	}
	var list []wire.Breakpoint
	r.must(wire.OpBreakList, nil, &list)
	if len(list) != 1 {
		t.Fatalf("breakpoints after an error: %+v", list)
	}
}

// A program without debugging symbols is reported as it loads, and a
// breakpoint on a file of its says why it cannot be; one on a function
// still works.
func TestNoDebuggingSymbols(t *testing.T) {
	bin := testenv.Examples(t)
	r := newRank(t, 0, 1, "")
	prog := filepath.Join(bin, "plain-nodebug")
	r.start(prog)
	if _, st := r.next(20*time.Second, wire.EventWarning); !strings.Contains(st.Reason, "no debugging symbols in "+prog) {
		t.Fatalf("warning: %q", st.Reason)
	}
	if _, err := r.do(wire.OpBreak, wire.Break{Location: "plain.c:15"}); err == nil || !strings.Contains(err.Error(), "has no debugging symbols (build it with -g)") {
		t.Fatalf("break plain.c:15: %v", err)
	}
	var bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "compute"}, &bp)
	if bp.Pending {
		t.Fatalf("break compute: %+v", bp)
	}
	r.must(wire.OpRun, nil, nil)
	if st := r.event(wire.EventStopped); st.Frame.Func != "compute" {
		t.Fatalf("stop: %+v", st)
	}
}

// An argument bt shows as "..." (an aggregate, as gdb's bt shows one) and
// those it shows whole, as gdb prints them with their values.
func TestAggregate(t *testing.T) {
	for v, want := range map[string]bool{
		"{m_cycle = 20}": true,
		"{0, 1, 2, 3}":   true,
		"std::vector of length 3, capacity 3 = {100, 100, 100}": true,
		"std::map with 2 elements = {[1] = 2, [3] = 4}":         true,
		"( x = 1.5, y = 2.5 )":                                  true,  // Fortran: a derived type
		"(0.5, 1, 1.5, 2)":                                      true,  // an array
		"(1,2)":                                                 false, // a complex number
		"42":                                                    false,
		"-1.5":                                                  false,
		"0x0":                                                   false,
		`0x4005d4 "a = {b}"`:                                    false,
		`"text = {x}"`:                                          false,
		"'a' = {'":                                              false,
		"<optimized out>":                                       false,
		"true":                                                  false,
	} {
		if got := gdbmi.Aggregate(v); got != want {
			t.Errorf("Aggregate(%q) = %v, want %v", v, got, want)
		}
	}
}
