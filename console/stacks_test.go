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

// A tree of samples the tree merged prints as the stacks tree does,
// with the ranks that moved between samples.
func TestSampleTreePrintsAsStacks(t *testing.T) {
	mainF := wire.Frame{Func: "main", File: "hang.c", Line: 30}
	var tr wire.CallTree
	tr.AddStack(1, []wire.Frame{{Func: "compute", File: "hang.c", Line: 9}, mainF})
	tr.AddStack(0, []wire.Frame{{Func: "MPI_Barrier", From: "libmpi.so.40"}, mainF})
	tr.Moved, tr.Samples = wire.Single(1), 3
	tr.Sort()
	v, lines, err := printers[wire.OpSample](wire.MustEncode(tr))
	if err != nil {
		t.Fatal(err)
	}
	want := "[0-1] main at hang.c:30 (2 ranks)\n  [0] MPI_Barrier from libmpi.so.40 (1 rank)\n  [1] compute at hang.c:9 (1 rank)"
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", got, want)
	}
	if obj := v.(map[string]any); obj["moved"] != "1" || obj["samples"] != 3 {
		t.Fatalf("JSON value %v", obj)
	}
}
