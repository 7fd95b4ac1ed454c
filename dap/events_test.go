package dap

import (
	"fmt"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// Lines of several ranks merge when they are equal, but a rank's lines
// never change their order.
func TestMergeOutputKeepsEachRanksOrder(t *testing.T) {
	line := func(ranks wire.RankSet, text string) wire.Group {
		return wire.Group{Ranks: ranks, Body: []byte(text)}
	}
	var outs []wire.Group
	outs = mergeOutput(outs, line(wire.Range(1, 3), "done"))
	outs = mergeOutput(outs, line(wire.Single(0), "token"))
	outs = mergeOutput(outs, line(wire.Single(0), "done"))
	outs = mergeOutput(outs, line(wire.Single(4), "done"))
	got := fmt.Sprint(describeGroups(outs))
	if want := "[[1-3 done] [0 token] [0,4 done]]"; got != want {
		t.Errorf("merged %s, want %s", got, want)
	}
}

func describeGroups(gs []wire.Group) [][2]string {
	var out [][2]string
	for _, g := range gs {
		out = append(out, [2]string{g.Ranks.String(), string(g.Body)})
	}
	return out
}

// Ranks that stop the same way, telling it one by one, are one group of
// the stop event; other stops keep their order.
func TestStopsOfOnePlaceMerge(t *testing.T) {
	at := func(line int) []byte {
		return wire.MustEncode(wire.State{State: wire.StateStopped, Reason: "breakpoint-hit", Frame: wire.Frame{Func: "pass", File: "ring.c", Line: line}})
	}
	var stops []stop
	for r, line := range []int{8, 8, 9, 8} {
		stops = addStop(stops, stop{ranks: wire.Single(r), body: at(line)})
	}
	if len(stops) != 2 || stops[0].ranks.String() != "0-1,3" || stops[1].ranks.String() != "2" {
		t.Errorf("stops %+v, want ranks 0-1,3 at line 8 then rank 2 at line 9", stops)
	}
}

// Ranks set going are running until they stop; those the command failed
// on are stopped again, and those whose answer timed out may run.
func TestRankStateOfRanksSetGoing(t *testing.T) {
	s := newRankState(wire.Range(0, 3))
	s.ran(wire.Range(0, 3))
	s.failed([]wire.Group{
		{Ranks: wire.Single(1), Status: wire.StatusError, Body: []byte("not stopped")},
		{Ranks: wire.Single(2), Status: wire.StatusTimeout},
		{Ranks: wire.Single(0), Status: wire.StatusOK},
	})
	if got := s.still(); !got.Equal(wire.Single(1)) {
		t.Fatalf("still %v, want 1", got)
	}
	if left := s.stopped(wire.Single(0)); !left.Equal(wire.Range(2, 3)) {
		t.Fatalf("still running after 0 stopped: %v, want 2-3", left)
	}
}
