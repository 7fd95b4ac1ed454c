package op_test

import (
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
	br := wire.Break{Location: "plain.c:15", Condition: "i > 2", Temporary: true}
	got, err := op.Break.DecodeBody(op.Break.Body(br))
	if err != nil || got != br {
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
