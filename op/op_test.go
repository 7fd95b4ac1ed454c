package op_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

func TestTableNamesAreUniqueAndFound(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range op.Table {
		if s.Name == "" || seen[s.Name] {
			t.Errorf("op %q: empty or listed twice", s.Name)
		}
		seen[s.Name] = true
		if got, ok := op.Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q) = %v, %v", s.Name, got, ok)
		}
		if s.Body == nil || s.Answer == nil {
			t.Errorf("op %q has no body or answer type (None where there is none)", s.Name)
		}
	}
	if _, ok := op.Lookup("frobnicate"); ok {
		t.Error("Lookup found an op that is not in the table")
	}
}

func TestNoneTravelsAsNoBytes(t *testing.T) {
	if b := op.Status.Body(op.None{}); b != nil {
		t.Errorf("a None body is %x, want no bytes", b)
	}
	if b, err := op.Delete.Answer(op.None{}); b != nil || err != nil {
		t.Errorf("a None answer is %x, %v; want no bytes", b, err)
	}
	// A None body ignores what came, as the ops without one always did.
	if _, err := op.Status.DecodeBody([]byte{0xc1}); err != nil {
		t.Errorf("a None body decoded with %v", err)
	}
}

func TestBodiesAndAnswersRoundTrip(t *testing.T) {
	br := wire.Break{Location: "plain.c:15", Condition: "i > 2", Tracepoint: true, Trace: []string{"i", "a[i]"}}
	got, err := op.Break.DecodeBody(op.Break.Body(br))
	if err != nil || !reflect.DeepEqual(got, br) {
		t.Fatalf("break body came back as %+v, %v", got, err)
	}
	// No bytes are the zero body: step without a count.
	if c, err := op.Step.DecodeBody(nil); err != nil || c.N != 0 {
		t.Fatalf("empty step body: %+v, %v", c, err)
	}
	st := wire.Stack{Frames: []wire.Frame{{Func: "main", File: "plain.c", Line: 15}}}
	b, err := op.Where.Answer(st)
	if err != nil {
		t.Fatal(err)
	}
	// The bytes are those every backend sent before the table: merging
	// compares them.
	if string(b) != string(wire.MustEncode(st)) {
		t.Fatalf("where's answer encodes as %x, not %x", b, wire.MustEncode(st))
	}
	back, err := op.Where.DecodeAnswer(b)
	if err != nil || len(back.Frames) != 1 || back.Frames[0] != st.Frames[0] {
		t.Fatalf("where's answer came back as %+v, %v", back, err)
	}
	if _, err := op.Where.DecodeAnswer([]byte{0x01}); err == nil {
		t.Fatal("a number decoded as a stack")
	}
}

func TestIdenticalMergesEqualBytesInRankOrder(t *testing.T) {
	m := op.NewMerger(op.Where.Name)
	a, b := wire.MustEncode(wire.Text{Text: "a"}), wire.MustEncode(wire.Text{Text: "b"})
	m.Add(wire.Range(4, 5), wire.StatusOK, b)
	m.Add(wire.Single(0), wire.StatusOK, a)
	m.Add(wire.Single(3), wire.StatusOK, a)
	m.Add(wire.Single(1), wire.StatusTimeout, a) // same bytes, other status
	var direct op.Identical
	direct.AddRank(6, wire.StatusOK, b)
	got := m.Groups()
	want := []struct {
		ranks  string
		status wire.Status
	}{{"0,3", wire.StatusOK}, {"1", wire.StatusTimeout}, {"4-5", wire.StatusOK}}
	if len(got) != len(want) {
		t.Fatalf("%d groups: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Ranks.String() != w.ranks || got[i].Status != w.status {
			t.Errorf("group %d is [%v] %v, want [%s] %v", i, got[i].Ranks, got[i].Status, w.ranks, w.status)
		}
	}
	if g := direct.Groups(); len(g) != 1 || g[0].Ranks.String() != "6" {
		t.Errorf("AddRank gave %+v", g)
	}
	// An op outside the table (a backend's own) merges identical bytes too.
	if _, ok := op.NewMerger("sim.sleep").(*op.Identical); !ok {
		t.Error("an op outside the table got a merger other than Identical")
	}
}

// Many distinct answers merge as a few do: the merger compares the first
// ones body by body and indexes them past that, and an answer equal to
// one of either kind joins its group.
func TestIdenticalMergesManyDistinctAnswers(t *testing.T) {
	const distinct, ranks = 20, 200
	var m op.Identical
	for r := range ranks {
		status := wire.StatusOK
		if r%distinct == 7 {
			status = wire.StatusError
		}
		m.AddRank(r, status, []byte(fmt.Sprintf("answer %d", r%distinct)))
	}
	got := m.Groups()
	if len(got) != distinct {
		t.Fatalf("%d groups of %d distinct answers: %+v", len(got), distinct, got)
	}
	for i, g := range got {
		var b wire.Builder
		for r := i; r < ranks; r += distinct {
			b.Add(r)
		}
		want := b.Set()
		if !g.Ranks.Equal(want) || string(g.Body) != fmt.Sprintf("answer %d", i) || (g.Status == wire.StatusError) != (i == 7) {
			t.Errorf("group %d is [%v] %v %q, want [%v] %q", i, g.Ranks, g.Status, g.Body, want, fmt.Sprintf("answer %d", i))
		}
	}
}

func TestEventTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range op.Events {
		if e.Name == "" || seen[e.Name] || e.Body == nil || e.Merge == nil {
			t.Errorf("event %+v: empty, listed twice, or without a body type or a fold", e)
		}
		seen[e.Name] = true
		if _, isOp := op.Lookup(e.Name); isOp {
			t.Errorf("%s is both an op and an event", e.Name)
		}
		if got, ok := op.LookupEvent(e.Name); !ok || got.Name != e.Name {
			t.Errorf("LookupEvent(%q) = %v, %v", e.Name, got, ok)
		}
	}
	for _, name := range []string{wire.EventConnected, wire.EventLost, wire.EventRejoined, wire.EventRunning,
		wire.EventStopped, wire.EventExited, wire.EventOutput, wire.EventOutputMark, wire.EventOutputEnd, wire.EventError,
		wire.EventLoaded, wire.EventWarning, wire.EventTraced} {
		if !seen[name] {
			t.Errorf("event %s is not in the table", name)
		}
	}
	if _, ok := op.LookupEvent(wire.OpWhere); ok {
		t.Error("LookupEvent found an op")
	}
}

// Bodies travel as they did before the table: a reason as its bytes,
// no body as no bytes, the others as msgpack.
func TestEventBodies(t *testing.T) {
	if b := op.Lost.Body("server 3 hung up"); string(b) != "server 3 hung up" {
		t.Errorf("a reason travels as %q", b)
	}
	if r, err := op.Error.DecodeBody([]byte("gdb died")); err != nil || r != "gdb died" {
		t.Errorf("a reason came back as %q, %v", r, err)
	}
	if b := op.Running.Body(op.None{}); b != nil {
		t.Errorf("running travels as %x", b)
	}
	st := wire.State{State: wire.StateStopped, Frame: wire.Frame{Func: "main", Line: 3}}
	b := op.Stopped.Body(st)
	if string(b) != string(wire.MustEncode(st)) {
		t.Errorf("stopped travels as %x, not %x", b, wire.MustEncode(st))
	}
	if back, err := op.Stopped.DecodeBody(b); err != nil || back != st {
		t.Errorf("stopped came back as %+v, %v", back, err)
	}
	if _, err := op.Output.DecodeBody([]byte{0x01}); err == nil {
		t.Error("a number decoded as output")
	}
}

func TestFoldIdentical(t *testing.T) {
	fold := op.EventFold(wire.EventOutput)
	into := wire.Group{Ranks: wire.Single(0), Body: []byte("a")}
	if !fold(&into, wire.Group{Ranks: wire.Range(2, 3), Body: []byte("a")}) || into.Ranks.String() != "0,2-3" {
		t.Errorf("equal bodies did not merge: %+v", into)
	}
	if fold(&into, wire.Group{Ranks: wire.Single(5), Body: []byte("b")}) ||
		fold(&into, wire.Group{Ranks: wire.Single(5), Status: wire.StatusError, Body: []byte("a")}) ||
		into.Ranks.String() != "0,2-3" {
		t.Errorf("different bodies or statuses merged: %+v", into)
	}
	// An event outside the table (none today) merges identical bytes too.
	probe := wire.Group{Ranks: wire.Single(1)}
	if !op.EventFold("sim.news")(&probe, wire.Group{Ranks: wire.Single(2)}) {
		t.Error("an event outside the table did not merge identical bodies")
	}
}
