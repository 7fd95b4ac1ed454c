package sdm

import (
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Events of the same rank keep their order; identical ones from other
// ranks merge as long as that order is not broken.
func TestBatcherMergesInOrder(t *testing.T) {
	var sent []*wire.Message
	b := newBatcher(time.Hour, wire.All(8), func(m *wire.Message) { sent = append(sent, m) })
	a, c := []byte("a"), []byte("c")
	b.add("output", wire.Group{Ranks: wire.Single(0), Body: a})
	b.add("output", wire.Group{Ranks: wire.Single(1), Body: a}) // merges with rank 0
	b.add("output", wire.Group{Ranks: wire.Single(1), Body: c})
	b.add("output", wire.Group{Ranks: wire.Single(2), Body: a}) // merges: nothing after holds rank 2
	b.add("output", wire.Group{Ranks: wire.Single(1), Body: a}) // may not merge: rank 1 said c after a
	b.flush()
	if len(sent) != 1 {
		t.Fatalf("%d messages", len(sent))
	}
	var got []string
	for _, g := range sent[0].Groups {
		got = append(got, "["+g.Ranks.String()+"]"+string(g.Body))
	}
	want := "[0-2]a [1]c [1]a"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("batch %s, want %s", s, want)
	}
	// A batch that covers every rank below the node goes at once.
	b.add("stopped", wire.Group{Ranks: wire.Range(0, 3), Body: a})
	b.add("stopped", wire.Group{Ranks: wire.Range(4, 7), Body: a})
	if len(sent) != 2 || sent[1].Groups[0].Ranks.String() != "0-7" {
		t.Fatalf("a full batch waited for the window: %d messages", len(sent))
	}
}

// The node folds a group only into one that no later group of its ranks
// follows, whatever the event's fold would merge: a fold that merges
// everything still keeps each rank's news in order.
func TestAppendEventKeepsOrderForAnyFold(t *testing.T) {
	var asked []string
	all := func(into *wire.Group, g wire.Group) bool {
		asked = append(asked, string(into.Body)+"<"+string(g.Body))
		into.Ranks = into.Ranks.Union(g.Ranks)
		into.Body = append(into.Body, g.Body...)
		return true
	}
	var groups []wire.Group
	for _, g := range []wire.Group{
		{Ranks: wire.Single(0), Body: []byte("a")},
		{Ranks: wire.Single(1), Body: []byte("b")}, // folds into a
		{Ranks: wire.Single(1), Body: []byte("c")}, // rank 1 is in ab: a group of its own
		{Ranks: wire.Single(2), Body: []byte("d")}, // folds into the latest, c
	} {
		groups = appendEvent(groups, g, all)
	}
	var got []string
	for _, g := range groups {
		got = append(got, "["+g.Ranks.String()+"]"+string(g.Body))
	}
	if s := strings.Join(got, " "); s != "[0-1]ab [1-2]cd" {
		t.Fatalf("groups %s, want [0-1]ab [1-2]cd", s)
	}
	if s := strings.Join(asked, " "); s != "a<b c<d" {
		t.Fatalf("the fold was asked %s, want a<b c<d", s)
	}
}
