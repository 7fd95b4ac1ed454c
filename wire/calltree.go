package wire

import (
	"slices"
	"strings"
	"time"
)

// OpSample takes stack samples of every thread of a rank's process,
// running or stopped, and answers them as a call-prefix tree with the
// rank inside; the tree's nodes merge the trees of their subtrees into
// one (package op), so the front end receives one tree whatever the
// number of ranks. B: Sample; A: CallTree.
const OpSample = "sample"

// Sample asks for Count samples of every thread's stack, Interval apart
// (the first at once). Zero Count is one sample.
type Sample struct {
	Count    int           `json:"count"`
	Interval time.Duration `json:"interval"`
}

// CallTree is STAT's merged call-prefix tree: each path from a root down
// to a node is a call stack prefix, outermost frame first, and a node's
// Ranks are the ranks one of whose threads was seen there in some sample.
// Moved are the ranks whose stacks changed from one sample to the next:
// ranks that make progress, where the others may hang. Samples is the
// most samples a rank took.
type CallTree struct {
	Roots   []CallNode `json:"roots"`
	Moved   RankSet    `json:"moved"`
	Samples int        `json:"samples"`
}

// CallNode is a frame of the tree with the ranks that reached it.
type CallNode struct {
	Frame    Frame      `json:"frame"`
	Ranks    RankSet    `json:"ranks"`
	Children []CallNode `json:"children,omitempty"`
}

// AddStack adds one sampled stack of rank, innermost frame first.
func (t *CallTree) AddStack(rank int, frames []Frame) { t.AddStackOf(Single(rank), frames) }

// AddStackOf adds a stack that every rank of r has, innermost frame
// first.
func (t *CallTree) AddStackOf(r RankSet, frames []Frame) {
	nodes := &t.Roots
	for i := len(frames) - 1; i >= 0; i-- {
		n := child(nodes, frames[i])
		n.Ranks = n.Ranks.Union(r)
		nodes = &n.Children
	}
}

// Merge adds the paths and ranks of u to t.
func (t *CallTree) Merge(u CallTree) {
	mergeNodes(&t.Roots, u.Roots)
	t.Moved = t.Moved.Union(u.Moved)
	t.Samples = max(t.Samples, u.Samples)
}

// Sort orders every node's children by frame, so that equal trees
// encode to equal bytes whatever order their stacks were added in.
func (t *CallTree) Sort() { sortNodes(t.Roots) }

func mergeNodes(into *[]CallNode, from []CallNode) {
	for _, f := range from {
		n := child(into, f.Frame)
		n.Ranks = n.Ranks.Union(f.Ranks)
		mergeNodes(&n.Children, f.Children)
	}
}

// child is the node of nodes for frame f, added when there is none.
func child(nodes *[]CallNode, f Frame) *CallNode {
	for i := range *nodes {
		if (*nodes)[i].Frame == f {
			return &(*nodes)[i]
		}
	}
	*nodes = append(*nodes, CallNode{Frame: f})
	return &(*nodes)[len(*nodes)-1]
}

func sortNodes(nodes []CallNode) {
	slices.SortFunc(nodes, func(a, b CallNode) int {
		if c := strings.Compare(a.Frame.Func, b.Frame.Func); c != 0 {
			return c
		}
		if c := strings.Compare(a.Frame.File, b.Frame.File); c != 0 {
			return c
		}
		if a.Frame.Line != b.Frame.Line {
			return a.Frame.Line - b.Frame.Line
		}
		return strings.Compare(a.Frame.From, b.Frame.From)
	})
	for i := range nodes {
		sortNodes(nodes[i].Children)
	}
}

// Place is a frame as stacks compare the innermost frames of threads:
// its function, file and library without its line. A thread's innermost
// line is where its pc happens to be (a rank that polls in a wait, or
// spins in one loop, moves its pc without leaving its place); the
// callers' lines are call sites, which stay while the call lasts.
func (f Frame) Place() Frame {
	f.Line = 0
	return f
}

// SamePlace reports whether two stacks, innermost frame first, show a
// thread at the same place: the same callers, line for line, and the
// same innermost function (Frame.Place).
func SamePlace(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	return a[0].Place() == b[0].Place() && slices.Equal(a[1:], b[1:])
}
