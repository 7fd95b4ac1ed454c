package console

import (
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

func stackGroup(ranks wire.RankSet, funcs ...string) wire.Group {
	frames := make([]wire.Frame, len(funcs))
	for i, f := range funcs {
		frames[i] = wire.Frame{Func: f, File: f + ".c", Line: 10 + i}
	}
	return wire.Group{Ranks: ranks, Body: wire.MustEncode(wire.Stack{Frames: frames})}
}

func TestStackTreeMergesPrefixes(t *testing.T) {
	groups := []wire.Group{
		stackGroup(wire.Range(0, 5), "MPI_Recv", "exchange", "main"),
		stackGroup(wire.Single(7), "compute", "main"),
		stackGroup(wire.Single(6), "MPI_Send", "exchange", "main"),
		{Ranks: wire.Single(8), Status: wire.StatusLost, Body: []byte("gone")},
	}
	roots, err := BuildStackTree(groups)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range roots {
		textTree(&b, r, 0)
	}
	// main's frame differs by line between the paths (the stacks above
	// number lines by depth), so the tree splits at the root like STAT's.
	want := `[0-6] main at main.c:12 (7 ranks)
  [0-6] exchange at exchange.c:11 (7 ranks)
    [0-5] MPI_Recv at MPI_Recv.c:10 (6 ranks)
    [6] MPI_Send at MPI_Send.c:10 (1 rank)
[7] main at main.c:11 (1 rank)
  [7] compute at compute.c:10 (1 rank)
`
	if b.String() != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestStackTreeRefusesGarbage(t *testing.T) {
	_, err := BuildStackTree([]wire.Group{{Ranks: wire.Single(3), Body: []byte{0xc1}}})
	if err == nil || !strings.Contains(err.Error(), "ranks 3") {
		t.Fatalf("garbage body: %v", err)
	}
}
