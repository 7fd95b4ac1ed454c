package client

import (
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

func ev(op string, ranks wire.RankSet) Event { return Event{Op: op, Group: wire.Group{Ranks: ranks}} }

func ops(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Op+" "+e.Group.Ranks.String())
	}
	return out
}

func want(t *testing.T, step string, got []Event, expect ...string) {
	t.Helper()
	g := ops(got)
	if len(g) != len(expect) {
		t.Fatalf("%s: let go %v, want %v", step, g, expect)
	}
	for i := range g {
		if g[i] != expect[i] {
			t.Fatalf("%s: let go %v, want %v", step, g, expect)
		}
	}
}

// A stop waits for the marks of all its ranks; the later news of its ranks
// waits behind it, and other ranks' news does not.
func TestOrderHoldsStopsForMarks(t *testing.T) {
	o := newOrder(4)
	r01 := wire.RankSet{}.Union(wire.Single(0)).Union(wire.Single(1))
	want(t, "running", o.news(ev(wire.EventRunning, r01)), "running 0-1")
	want(t, "stop before its marks", o.news(ev(wire.EventStopped, r01)))
	want(t, "later news of rank 1", o.news(ev(wire.EventRunning, wire.Single(1))))
	want(t, "news of rank 2", o.news(ev(wire.EventRunning, wire.Single(2))), "running 2")
	if !o.holds(wire.Single(1)) || o.holds(wire.Single(3)) {
		t.Fatal("holds: wrong ranks")
	}
	want(t, "mark of rank 0", o.mark(wire.Single(0)))
	want(t, "mark of rank 1", o.mark(wire.Single(1)), "stopped 0-1", "running 1")
	// A mark may come before its stop.
	want(t, "early mark", o.mark(wire.Single(3)))
	want(t, "exit after its mark", o.news(ev(wire.EventExited, wire.Single(3))), "exited 3")
	// The next stop of rank 3 needs a mark of its own.
	want(t, "second stop", o.news(ev(wire.EventStopped, wire.Single(3))))
	want(t, "end", o.end(), "stopped 3")
}

// A rank whose server is lost sends no more marks: its news goes on.
func TestOrderLetsLostRanksGo(t *testing.T) {
	o := newOrder(2)
	want(t, "stop", o.news(ev(wire.EventStopped, wire.Single(1))))
	want(t, "lost", o.news(ev(wire.EventLost, wire.Single(1))), "stopped 1", "lost 1")
	want(t, "stop of a lost rank", o.news(ev(wire.EventStopped, wire.Single(1))), "stopped 1")
	// Back again, it marks its stops anew.
	want(t, "connected", o.news(ev(wire.EventConnected, wire.Single(1))), "connected 1")
	want(t, "stop after joining", o.news(ev(wire.EventStopped, wire.Single(1))))
	want(t, "mark", o.mark(wire.Single(1)), "stopped 1")
}
