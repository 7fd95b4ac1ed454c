package op

import (
	"testing"

	"github.com/sdm-hpc/sdm/wire"
)

// The trees of many ranks merge into one group, whose bytes do not depend
// on the order the answers came in; failures stay groups of their own.
func TestCallTreesMergeIntoOne(t *testing.T) {
	stack := func(fn string) []wire.Frame {
		return []wire.Frame{{Func: fn, File: "hang.c", Line: 9}, {Func: "main", File: "hang.c", Line: 30}}
	}
	answer := func(rank int, fn string) []byte {
		var t wire.CallTree
		t.AddStack(rank, stack(fn))
		t.Samples = 1
		return wire.MustEncode(t)
	}
	merge := func(order []int) []wire.Group {
		m := Sample.Merge()
		for _, r := range order {
			if r == 2 {
				m.Add(wire.Single(r), wire.StatusError, []byte("ptrace: Operation not permitted"))
				continue
			}
			fn := "wait"
			if r == 5 {
				fn = "compute"
			}
			m.Add(wire.Single(r), wire.StatusOK, answer(r, fn))
		}
		return m.Groups()
	}
	a, b := merge([]int{0, 1, 2, 3, 4, 5}), merge([]int{5, 4, 3, 2, 1, 0})
	if len(a) != 2 || len(b) != 2 || string(a[0].Body) != string(b[0].Body) {
		t.Fatalf("groups %v and %v", a, b)
	}
	want := wire.Range(0, 1).Union(wire.Range(3, 5))
	if !a[0].Ranks.Equal(want) || a[1].Status != wire.StatusError || !a[1].Ranks.Equal(wire.Single(2)) {
		t.Fatalf("groups %v", a)
	}
	tree, err := Sample.DecodeAnswer(a[0].Body)
	if err != nil || len(tree.Roots) != 1 || !tree.Roots[0].Ranks.Equal(want) || len(tree.Roots[0].Children) != 2 {
		t.Fatalf("tree %+v, %v", tree, err)
	}
}
