package wire

import (
	"bytes"
	"testing"
)

func TestCallTreeMergesInAnyOrder(t *testing.T) {
	mainF := Frame{Func: "main", File: "hang.c", Line: 30}
	wait := Frame{Func: "MPI_Barrier", From: "libmpi.so.40"}
	compute := Frame{Func: "compute", File: "hang.c", Line: 12}
	stacks := map[int][]Frame{0: {wait, mainF}, 1: {compute, mainF}, 2: {wait, mainF}, 3: {wait, mainF}}

	var a, b CallTree
	for r := 0; r < 4; r++ {
		var one CallTree
		one.AddStack(r, stacks[r])
		a.Merge(one)
	}
	for r := 3; r >= 0; r-- {
		b.AddStack(r, stacks[r])
	}
	b.Moved = Single(1)
	a.Merge(CallTree{Moved: Single(1)})
	a.Sort()
	b.Sort()
	ea, eb := MustEncode(a), MustEncode(b)
	if !bytes.Equal(ea, eb) {
		t.Fatalf("the same stacks in another order encode differently:\n%+v\n%+v", a, b)
	}
	if len(a.Roots) != 1 || !a.Roots[0].Ranks.Equal(Range(0, 3)) || len(a.Roots[0].Children) != 2 {
		t.Fatalf("tree %+v", a)
	}
	for _, c := range a.Roots[0].Children {
		want := Single(0).Union(Range(2, 3))
		if c.Frame == compute {
			want = Single(1)
		}
		if !c.Ranks.Equal(want) {
			t.Errorf("%s: ranks %v, want %v", c.Frame.Func, c.Ranks, want)
		}
	}
	var back CallTree
	if err := Decode(ea, &back); err != nil || !back.Moved.Equal(Single(1)) || !back.Roots[0].Ranks.Equal(Range(0, 3)) {
		t.Fatalf("decoded %+v, %v", back, err)
	}
}
