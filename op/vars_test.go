package op_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// describeVars prints merged lists of variables as the console would:
// "[0-7] n=100; [0-3] i=4; ".
func describeVars(t *testing.T, groups []wire.Group) string {
	t.Helper()
	var b strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&b, "[%v] ", g.Ranks)
		if g.Status != wire.StatusOK {
			fmt.Fprintf(&b, "%v: %s; ", g.Status, g.Body)
			continue
		}
		vars, err := op.Locals.DecodeAnswer(g.Body)
		if err != nil {
			t.Fatal(err)
		}
		if len(vars) == 0 {
			b.WriteString("none; ")
		}
		for _, v := range vars {
			fmt.Fprintf(&b, "%s=%s; ", v.Name, v.Value)
		}
	}
	return b.String()
}

func locals(n, i int) []byte {
	b, _ := op.Locals.Answer([]wire.Var{{Name: "n", Type: "int", Value: fmt.Sprint(n), Index: 0},
		{Name: "i", Type: "int", Value: fmt.Sprint(i), Index: 1}})
	return b
}

// Ranks that differ in one variable show one group per value of it, and
// the variables they share once; a node above merges the groups of the
// nodes below the same way, in any order.
func TestVarsMergePerVariable(t *testing.T) {
	want := "[0-7] n=100; [0-3] i=4; [4-7] i=5; [8] none; [9] error: No frame selected.; "
	leaves := func(m op.Merger, ranks []int) {
		for _, r := range ranks {
			switch {
			case r == 8:
				m.Add(wire.Single(r), wire.StatusOK, wire.MustEncode([]wire.Var(nil)))
			case r == 9:
				m.Add(wire.Single(r), wire.StatusError, []byte("No frame selected."))
			default:
				m.Add(wire.Single(r), wire.StatusOK, locals(100, 4+r/4))
			}
		}
	}
	direct := op.NewMerger(wire.OpLocals)
	leaves(direct, []int{9, 7, 0, 8, 3, 4, 1, 2, 5, 6})
	if got := describeVars(t, direct.Groups()); got != want {
		t.Fatalf("merged at one node: %s\nwant %s", got, want)
	}
	// Two subtrees, merged again above them, arriving in either order.
	for _, order := range [][2][]int{{{0, 1, 2, 3, 8}, {4, 5, 6, 7, 9}}, {{9, 6, 7, 5, 4}, {2, 8, 1, 3, 0}}} {
		top := op.NewMerger(wire.OpArgs)
		for _, ranks := range order {
			below := op.NewMerger(wire.OpArgs)
			leaves(below, ranks)
			for _, g := range below.Groups() {
				top.Add(g.Ranks, g.Status, g.Body)
			}
		}
		if got := describeVars(t, top.Groups()); got != want {
			t.Fatalf("merged over two levels: %s\nwant %s", got, want)
		}
	}
}

// BenchmarkVarsMerge merges the locals of 1024 ranks, ten variables each,
// two of which differ by rank, at one node.
func BenchmarkVarsMerge(b *testing.B) {
	bodies := make([][]byte, 1024)
	for r := range bodies {
		vars := make([]wire.Var, 10)
		for i := range vars {
			vars[i] = wire.Var{Name: fmt.Sprintf("v%d", i), Type: "int", Value: "100", Index: i}
		}
		vars[3].Value, vars[7].Value = fmt.Sprint(r%2), fmt.Sprint(r)
		bodies[r], _ = op.Locals.Answer(vars)
	}
	b.ReportAllocs()
	for b.Loop() {
		m := op.NewMerger(wire.OpLocals)
		for r, body := range bodies {
			m.Add(wire.Single(r), wire.StatusOK, body)
		}
		if len(m.Groups()) != 8+2+1024 {
			b.Fatal("wrong groups")
		}
	}
}
