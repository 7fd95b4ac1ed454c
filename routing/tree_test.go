package routing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The binomial tree must match the one PTP's SDM builds for 8 servers.
func TestBinomialTreeOf8(t *testing.T) {
	tr := Tree{Size: 8}
	want := map[int][]int{
		8: {0, 1, 3, 7},
		0: {2, 4},
		1: {5},
		2: {6},
		3: nil, 4: nil, 5: nil, 6: nil, 7: nil,
	}
	for id, kids := range want {
		if got := tr.Children(id); !slices.Equal(got, kids) {
			t.Errorf("Children(%d) = %v, want %v", id, got, kids)
		}
	}
	parents := []int{8, 8, 0, 8, 0, 1, 2, 8, -1}
	for id, p := range parents {
		if got := tr.Parent(id); got != p {
			t.Errorf("Parent(%d) = %d, want %d", id, got, p)
		}
	}
	if d := tr.Depth(); d != 3 {
		t.Errorf("Depth = %d, want 3", d)
	}
}

func TestKaryTreeOf8(t *testing.T) {
	// Positions 1..8 hold servers 0..7. The master splits them into
	// [1,5) and [5,9); server 0 (position 1) splits [2,5) into [2,4) and
	// [4,5); and so on.
	tr := Tree{Size: 8, Fanout: 2}
	want := map[int][]int{
		8: {0, 4},
		0: {1, 3},
		1: {2},
		4: {5, 7},
		5: {6},
		2: nil, 3: nil, 6: nil, 7: nil,
	}
	for id, kids := range want {
		if got := tr.Children(id); !slices.Equal(got, kids) {
			t.Errorf("Children(%d) = %v, want %v", id, got, kids)
		}
	}
	var walk []int
	tr.Walk(4, func(i int) { walk = append(walk, i) })
	if !slices.Equal(walk, []int{4, 5, 6, 7}) {
		t.Errorf("Walk(4) = %v, want the contiguous range 4..7", walk)
	}
	if d := tr.Depth(); d != 3 {
		t.Errorf("Depth = %d, want 3", d)
	}
}

func TestTreeInvariants(t *testing.T) {
	fanouts := []int{0, 2, 3, 4, 7, 16, 70}
	for n := 1; n <= 200; n++ {
		for _, k := range fanouts {
			checkTree(t, Tree{Size: n, Fanout: k})
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		checkTree(t, Tree{Size: 1 + r.IntN(5000), Fanout: fanouts[r.IntN(len(fanouts))]})
	}
}

// checkTree verifies the properties every tree shape must have, from first
// principles rather than from the formulas under test.
func checkTree(t *testing.T, tr Tree) {
	t.Helper()
	if err := tr.Verify(); err != nil {
		t.Fatal(err)
	}
	n, m := tr.Size, tr.Master()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%+v: %s", tr, fmt.Sprintf(format, args...))
	}
	if m != n || !tr.Valid(m) || !tr.Valid(0) || tr.Valid(-1) || tr.Valid(n+1) {
		fail("Master/Valid wrong")
	}
	if tr.Parent(m) != -1 {
		fail("master has parent %d", tr.Parent(m))
	}
	// Every node but the master is the child of exactly one node, and
	// that node is its Parent.
	parentOf := make([]int, n+1)
	for i := range parentOf {
		parentOf[i] = -1
	}
	for id := 0; id <= n; id++ {
		kids := tr.Children(id)
		if !slices.IsSorted(kids) {
			fail("Children(%d) = %v not ascending", id, kids)
		}
		for _, c := range kids {
			if c < 0 || c >= n {
				fail("Children(%d) holds %d", id, c)
			}
			if parentOf[c] != -1 {
				fail("%d is a child of both %d and %d", c, parentOf[c], id)
			}
			parentOf[c] = id
			if tr.Parent(c) != id {
				fail("Parent(%d) = %d, but it is a child of %d", c, tr.Parent(c), id)
			}
		}
	}
	// Depth is the longest chain of Parent calls, which also proves the
	// parent links reach the master without cycles.
	depth := make([]int, n+1)
	maxDepth := 0
	for id := 0; id < n; id++ {
		if parentOf[id] == -1 {
			fail("server %d is nobody's child", id)
		}
		d := 0
		for p := id; p != m; p = tr.Parent(p) {
			if d++; d > n {
				fail("cycle above %d", id)
			}
		}
		depth[id] = d
		maxDepth = max(maxDepth, d)
	}
	if tr.Depth() != maxDepth {
		fail("Depth = %d, longest path %d", tr.Depth(), maxDepth)
	}
	// Walk of the master visits every server once, and the walks of a
	// node's children partition its own walk minus itself.
	all := walk(tr, m)
	if len(all) != n {
		fail("Walk(master) visited %d of %d servers", len(all), n)
	}
	for id := 0; id <= n; id++ {
		own := walk(tr, id)
		var union []int
		if id != m {
			union = append(union, id)
		}
		for _, c := range tr.Children(id) {
			union = append(union, walk(tr, c)...)
		}
		slices.Sort(own)
		slices.Sort(union)
		if !slices.Equal(own, union) {
			fail("Walk(%d) = %v, but the children's walks give %v", id, own, union)
		}
		if tr.Fanout != 0 && tr.Hosts == nil && len(own) > 0 && own[len(own)-1]-own[0] != len(own)-1 {
			fail("Walk(%d) = %v is not contiguous", id, own)
		}
	}
}

// walk returns the servers of id's subtree, failing on a repeat.
func walk(tr Tree, id int) []int {
	var out []int
	seen := map[int]bool{}
	tr.Walk(id, func(i int) {
		if seen[i] {
			panic(fmt.Sprintf("%+v: Walk(%d) visits %d twice", tr, id, i))
		}
		seen[i] = true
		out = append(out, i)
	})
	return out
}

func TestTreeInvalid(t *testing.T) {
	for _, tr := range []Tree{{Size: 0}, {Size: -5}, {Size: 4, Fanout: 1}, {Size: 4, Fanout: -2}, {Size: MaxSize + 1}} {
		if tr.Verify() == nil {
			t.Errorf("%+v verified", tr)
		}
		if tr.Valid(0) || tr.Parent(0) != -1 || tr.Children(tr.Master()) != nil || tr.Depth() != 0 {
			t.Errorf("%+v answered questions", tr)
		}
		tr.Walk(tr.Master(), func(int) { t.Errorf("%+v walked", tr) })
	}
	tr := Tree{Size: 4}
	if tr.Parent(5) != -1 || tr.Children(-1) != nil {
		t.Error("ids outside the tree have relatives")
	}
	tr.Walk(4, nil) // must not panic
}

func TestTreeLarge(t *testing.T) {
	const n = 1 << 20
	for _, k := range []int{0, 2, 32} {
		tr := Tree{Size: n, Fanout: k}
		count := 0
		tr.Walk(tr.Master(), func(int) { count++ })
		if count != n {
			t.Errorf("fanout %d: Walk visited %d of %d", k, count, n)
		}
		if p := tr.Parent(n - 1); !tr.Valid(p) {
			t.Errorf("fanout %d: Parent(%d) = %d", k, n-1, p)
		}
		t.Logf("fanout %d: depth %d, master has %d children", k, tr.Depth(), len(tr.Children(tr.Master())))
	}
}

func TestTreeWriteTo(t *testing.T) {
	var b strings.Builder
	n, err := Tree{Size: 4}.WriteTo(&b)
	if err != nil {
		t.Fatal(err)
	}
	want := "4 - 0,1,3\n0 4 2\n1 4 -\n2 0 -\n3 4 -\n"
	if b.String() != want || n != int64(len(want)) {
		t.Errorf("wrote %d bytes:\n%s\nwant\n%s", n, b.String(), want)
	}
}
