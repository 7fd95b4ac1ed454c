package routing

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Tree is the shape in which the servers forward commands down from the
// master and replies back up. Servers are 0..Size-1 and the master is Size.
//
// Both shapes are computed in "position space", where the master is position
// 0 and server id is position id+1; what differs is how a position's
// children are chosen. All methods are pure arithmetic: no table is built, so
// a Tree of a million servers costs nothing to hold.
//
// On a Tree that fails Verify, and for ids it does not hold, the methods
// return -1, nil, 0 or nothing, never panic.
type Tree struct {
	Size   int // N, the number of servers; the master is index N
	Fanout int // 0: PTP's binomial tree; K >= 2: a K-ary tree whose subtrees are contiguous index ranges
	// Hosts, when set, makes the tree one of hosts: the shape above is
	// that of the hosts' leaders, each host's other servers hang below
	// its leader (Hosts).
	Hosts *Hosts
}

// Verify reports whether the tree can be used: Size must be 1..MaxSize and
// Fanout 0 or at least 2.
func (t Tree) Verify() error {
	if t.Size < 1 || t.Size > MaxSize {
		return fmt.Errorf("routing: tree of %d servers: want 1 to %d", t.Size, MaxSize)
	}
	if t.Fanout < 0 || t.Fanout == 1 {
		return fmt.Errorf("routing: tree fanout %d: want 0 (binomial) or at least 2", t.Fanout)
	}
	if t.Hosts != nil {
		return t.verifyHosts()
	}
	return nil
}

func (t Tree) ok() bool { return t.Verify() == nil }

// Master returns the index of the master, which is Size.
func (t Tree) Master() int { return t.Size }

// Valid reports whether id is a node of the tree: a server 0..Size-1 or the
// master Size.
func (t Tree) Valid(id int) bool { return t.ok() && id >= 0 && id <= t.Size }

func (t Tree) pos(id int) int {
	if id == t.Size {
		return 0
	}
	return id + 1
}

func (t Tree) id(pos int) int {
	if pos == 0 {
		return t.Size
	}
	return pos - 1
}

// Parent returns the index of id's parent; -1 for the master and for an id
// not in the tree.
func (t Tree) Parent(id int) int {
	if !t.Valid(id) || id == t.Size {
		return -1
	}
	if t.Hosts != nil {
		return t.hostParent(id)
	}
	if t.Fanout == 0 {
		return t.id(binomialParent(t.pos(id)))
	}
	_, _, parent := t.span(t.pos(id))
	return t.id(parent)
}

// Children returns the indices of id's children in ascending order, or nil
// for a leaf or an id not in the tree.
func (t Tree) Children(id int) []int {
	if !t.Valid(id) {
		return nil
	}
	if t.Hosts != nil {
		return t.hostChildren(id)
	}
	var kids []int
	add := func(pos int) { kids = append(kids, t.id(pos)) }
	if t.Fanout == 0 {
		binomialChildren(t.pos(id), t.Size+1, add)
	} else {
		lo, hi, _ := t.span(t.pos(id))
		karyChildren(lo, hi, t.Fanout, add)
	}
	return kids
}

// Walk calls fn for every server index in id's subtree, including id itself
// unless id is the master. It runs in time proportional to the subtree and
// without recursion, so walking a million servers is cheap.
func (t Tree) Walk(id int, fn func(int)) {
	if !t.Valid(id) || fn == nil {
		return
	}
	if t.Hosts != nil {
		t.hostWalk(id, fn)
		return
	}
	p := t.pos(id)
	if t.Fanout == 0 {
		binomialWalk(p, t.Size+1, func(q int) { fn(t.id(q)) })
		return
	}
	lo, hi, _ := t.span(p)
	for q := max(lo, 1); q < hi; q++ {
		fn(q - 1)
	}
}

// Depth returns the number of levels below the master: the length, in
// edges, of the longest path from the master to a server. It is 0 for a
// tree that fails Verify.
func (t Tree) Depth() int {
	if !t.ok() {
		return 0
	}
	if t.Hosts != nil {
		return t.hostDepth()
	}
	if t.Fanout == 0 {
		return binomialDepth(t.Size)
	}
	return karyDepth(t.Size+1, t.Fanout)
}

// WriteTo writes the tree, one line per node, the master first: "ID
// PARENT CHILDREN", with "-" for none and the children comma-separated
// (sdm routes tree).
func (t Tree) WriteTo(w io.Writer) (int64, error) {
	b := bufio.NewWriter(w)
	var n int64
	line := func(id int) {
		parent := "-"
		if p := t.Parent(id); p >= 0 {
			parent = strconv.Itoa(p)
		}
		kids := t.Children(id)
		list := "-"
		if len(kids) > 0 {
			s := make([]string, len(kids))
			for i, k := range kids {
				s[i] = strconv.Itoa(k)
			}
			list = strings.Join(s, ",")
		}
		m, _ := fmt.Fprintf(b, "%d %s %s\n", id, parent, list)
		n += int64(m)
	}
	line(t.Master())
	for id := 0; id < t.Size; id++ {
		line(id)
	}
	return n, b.Flush()
}
