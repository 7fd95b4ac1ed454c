package wire

import "testing"

// A rank that says the same thing twice is heard twice; another rank that
// says it merges with the first.
func TestAppendMergedKeepsRepeats(t *testing.T) {
	type item struct {
		ranks RankSet
		text  string
	}
	ranks := func(i *item) *RankSet { return &i.ranks }
	same := func(a, b *item) bool { return a.text == b.text }
	var list []item
	for _, it := range []item{{Single(0), "x"}, {Single(1), "x"}, {Single(0), "x"}} {
		list = AppendMerged(list, it, ranks, same, nil)
	}
	if len(list) != 2 || list[0].ranks.String() != "0-1" || list[1].ranks.String() != "0" {
		t.Fatalf("merged into %v, want [0-1] x then [0] x", list)
	}
}
