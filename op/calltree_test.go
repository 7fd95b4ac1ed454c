package op

import (
	"fmt"
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

// BenchmarkCallTreesMerge merges the one-rank trees of n ranks in 16
// classes in one place, as a node of a flat tree would: the cost per rank
// of the merge, and the bytes of the one tree that goes up. Classes by
// rank modulo 16 make rank sets of n/16 spans; classes of consecutive
// ranks, sets of one span, and then the bytes do not grow with n at all.
func BenchmarkCallTreesMerge(b *testing.B) {
	for _, c := range []struct {
		layout string
		class  func(r, n int) int
	}{{"strided", func(r, _ int) int { return r % 16 }}, {"blocks", func(r, n int) int { return r * 16 / n }}} {
		for _, n := range []int{64, 1024} {
			b.Run(fmt.Sprintf("classes=%s/ranks=%d", c.layout, n), func(b *testing.B) {
				bodies := make([][]byte, n)
				for r := range bodies {
					// As the simulator's "groups 16 8": 8 frames, 16 paths.
					frames, g := []wire.Frame{}, c.class(r, n)
					for level := 7; level >= 1; level-- {
						frames = append(frames, wire.Frame{Func: fmt.Sprintf("work_%d_%d", g, level), File: "groups.c", Line: 100*g + level})
					}
					frames = append(frames, wire.Frame{Func: "main", File: "groups.c", Line: 9})
					var t wire.CallTree
					t.AddStack(r, frames)
					t.Samples = 1
					bodies[r] = wire.MustEncode(t)
				}
				bytes := 0
				for b.Loop() {
					m := Sample.Merge()
					for r, body := range bodies {
						m.Add(wire.Single(r), wire.StatusOK, body)
					}
					groups := m.Groups()
					if len(groups) != 1 {
						b.Fatalf("%d groups", len(groups))
					}
					bytes = len(groups[0].Body)
				}
				b.ReportMetric(float64(bytes), "bytes/answer")
			})
		}
	}
}
