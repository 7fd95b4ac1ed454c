package gdbmi_test

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// A tracepoint's passes are told with their values, each expression's
// error as a value of its own, and never as a stop: the rank runs on to
// the breakpoint after the loop, where the tracepoint is listed as one;
// deleted, it tells no more.
func TestTracepoint(t *testing.T) {
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(testenv.Examples(t), "steps"), "5")
	var tp, bp wire.Breakpoint
	r.must(wire.OpBreak, wire.Break{Location: "steps.c:12", Condition: "i < 3", Tracepoint: true, Trace: []string{"i", "rank % 7", "nosuch"}}, &tp)
	if tp.Type != "tracepoint" || !slices.Equal(tp.Trace, []string{"i", "rank % 7", "nosuch"}) {
		t.Fatalf("the tracepoint as set: %+v", tp)
	}
	r.must(wire.OpBreak, wire.Break{Location: "steps.c:25"}, &bp)
	r.must(wire.OpRun, nil, nil)
	var passes []wire.Traced
	deadline := time.After(20 * time.Second)
	for stopped := false; !stopped; {
		select {
		case ev := <-r.b.Events():
			switch ev.Op {
			case wire.EventTraced:
				var tr wire.Traced
				if err := wire.Decode(ev.Body, &tr); err != nil {
					t.Fatal(err)
				}
				passes = append(passes, tr)
			case wire.EventStopped:
				var st wire.State
				wire.Decode(ev.Body, &st)
				if st.Breakpoint != bp.Number {
					t.Fatalf("a stop other than at breakpoint %d: %+v", bp.Number, st)
				}
				stopped = true
			case wire.EventExited:
				t.Fatal("the program ended before the breakpoint after the loop")
			}
		case <-deadline:
			t.Fatalf("no stop at the breakpoint after the loop within 20s; passes %+v", passes)
		}
	}
	if len(passes) != 3 {
		t.Fatalf("%d passes told, want 3 (i < 3): %+v", len(passes), passes)
	}
	for n, p := range passes {
		if p.Breakpoint != tp.Number || p.Pass != n+1 || len(p.Values) != 3 || p.Values[0] != strconv.Itoa(n) || p.Values[1] != "0" ||
			!strings.HasPrefix(p.Values[2], "<error: ") || !strings.Contains(p.Values[2], "nosuch") {
			t.Errorf("pass %d: %+v", n+1, p)
		}
	}
	var list []wire.Breakpoint
	r.must(wire.OpBreakList, nil, &list)
	if len(list) != 2 || list[0].Type != "tracepoint" || len(list[0].Trace) != 3 || list[1].Type != "breakpoint" || list[1].Trace != nil {
		t.Fatalf("breakpoints: %+v", list)
	}
	r.must(wire.OpDelete, wire.IDs{IDs: []int{tp.Number}}, nil)
	r.must(wire.OpBreakList, nil, &list)
	if len(list) != 1 || list[0].Type != "breakpoint" {
		t.Fatalf("after the tracepoint's delete: %+v", list)
	}
	r.must(wire.OpCont, nil, nil)
	if op, st := r.next(20*time.Second, wire.EventExited, wire.EventTraced, wire.EventStopped); op != wire.EventExited {
		t.Fatalf("after the delete: %s %+v", op, st)
	}
}

// A where of a rank that passes a tracepoint all the time looks at it in
// passing, between passes: each answers with the rank's stack, and the
// passes go on being told; a kill then ends it at once.
func TestWhereWhilePassingATracepoint(t *testing.T) {
	r := newRank(t, 0, 1, "")
	r.start(filepath.Join(testenv.Examples(t), "steps"), "100000000")
	r.must(wire.OpBreak, wire.Break{Location: "steps.c:12", Tracepoint: true, Trace: []string{"i"}}, nil)
	r.must(wire.OpRun, nil, nil)
	// The node reads events as they come.
	var passes atomic.Int64
	go func() {
		for ev := range r.b.Events() {
			if ev.Op == wire.EventTraced {
				passes.Add(1)
			}
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); passes.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no pass told within 20s of the run")
		}
		runtime.Gosched()
	}
	for range 20 {
		var st wire.Stack
		r.must(wire.OpWhere, nil, &st)
		if len(st.Frames) == 0 || st.Frames[len(st.Frames)-1].Func != "main" {
			t.Fatalf("where: %+v", st)
		}
	}
	before := passes.Load()
	for deadline := time.Now().Add(10 * time.Second); passes.Load() == before; {
		if time.Now().After(deadline) {
			t.Fatal("no pass told within 10s after the wheres: the rank was left stopped")
		}
		runtime.Gosched()
	}
	// Killed while it passes the tracepoint, the rank is let go at once:
	// a shared gdb 13 never reaped a process killed as it let it go on
	// from the breakpoint, and the kill waited for its 20 s deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	r.b.Do(ctx, wire.OpKill, nil, func(_ []byte, err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kill: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("kill of a rank passing a tracepoint did not end within 10 s")
	}
}
