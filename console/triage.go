package console

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// StackClass is an equivalence class of STAT's: ranks whose whole stacks
// agree, every thread and every sample, so that one rank of the class
// stands for all of them. Stacks agree when their threads are at the
// same places (wire.SamePlace): the same call sites, and the same
// innermost function at whatever line its pc was.
type StackClass struct {
	Ranks wire.RankSet
	// Ends are the innermost frames of the class's paths through the
	// tree, the main thread's first, then in the tree's order; an end
	// reached at several lines of its function has no line.
	Ends []wire.Frame
	// Label says where the class departs from the biggest class: the
	// paths (threads) it has that the biggest has not, each from the
	// first frame where they part to the innermost, the main thread's
	// first, then those it lacks. The biggest class is labelled by its
	// ends. No two classes have the same label.
	Label string
	// Outlier marks a class smaller than the mean class: the ranks that
	// look different from the many, where a hang usually starts.
	Outlier bool
	ends    []*stackEnd
}

// stackEnd is a place where paths end: the nodes of one function under
// one parent, where some ranks end.
type stackEnd struct {
	frame wire.Frame // the nodes' frame, without a line if theirs differ
	nodes []*StackNode
	ranks wire.RankSet // the ranks whose paths end at one of the nodes
}

// StackClasses splits the ranks of the tree into classes, biggest
// first (the lowest rank breaks ties). A rank's stacks are the paths
// that end, for it, at a node none of whose children holds it; ranks
// with the same set of such ends, counted by place (StackClass), are
// one class. The split works on rank sets, path by path, so its cost
// grows with the number of paths and classes, not of ranks. (A thread
// that stops at a node that another of the same rank's threads passes
// through is not seen as its own path: the tree holds ranks, not
// threads.)
func StackClasses(roots []*StackNode) []StackClass {
	var all wire.RankSet
	for _, r := range roots {
		all = all.Union(r.Ranks)
	}
	if all.Empty() {
		return nil
	}
	classes := []StackClass{{Ranks: all}}
	parent := map[*StackNode]*StackNode{}
	var walk func(nodes []*StackNode)
	walk = func(nodes []*StackNode) {
		for _, e := range endsOf(nodes) {
			classes = split(classes, e)
		}
		for _, n := range nodes {
			for _, c := range n.Children {
				parent[c] = n
			}
			walk(n.Children)
		}
	}
	walk(mainFirst(roots))
	slices.SortFunc(classes, func(a, b StackClass) int {
		if a.Ranks.Count() != b.Ranks.Count() {
			return b.Ranks.Count() - a.Ranks.Count()
		}
		return a.Ranks.Min() - b.Ranks.Min()
	})
	if len(classes) > 1 {
		for i := range classes {
			classes[i].Outlier = classes[i].Ranks.Count()*len(classes) < all.Count()
		}
	}
	label(classes, parent)
	return classes
}

// endsOf groups the paths that end at sibling nodes by place, in the
// siblings' order.
func endsOf(siblings []*StackNode) []*stackEnd {
	var out []*stackEnd
	byPlace := map[wire.Frame]*stackEnd{}
	for _, n := range siblings {
		ends := n.Ranks
		for _, c := range n.Children {
			ends = ends.Minus(c.Ranks)
		}
		if ends.Empty() {
			continue
		}
		e := byPlace[n.Frame.Place()]
		if e == nil {
			e = &stackEnd{frame: n.Frame}
			byPlace[n.Frame.Place()] = e
			out = append(out, e)
		} else if e.frame != n.Frame {
			e.frame = n.Frame.Place()
		}
		e.nodes = append(e.nodes, n)
		e.ranks = e.ranks.Union(ends)
	}
	return out
}

// split parts every class into its ranks whose paths end at e and the
// others.
func split(classes []StackClass, e *stackEnd) []StackClass {
	out := make([]StackClass, 0, len(classes)+1)
	for _, c := range classes {
		in := c.Ranks.Intersect(e.ranks)
		if rest := c.Ranks.Minus(e.ranks); !rest.Empty() {
			out = append(out, StackClass{Ranks: rest, Ends: c.Ends, ends: c.ends})
		}
		if !in.Empty() {
			out = append(out, StackClass{Ranks: in, Ends: append(slices.Clip(c.Ends), e.frame), ends: append(slices.Clip(c.ends), e)})
		}
	}
	return out
}

// mainFirst orders the roots of a tree as a process lists its threads:
// the main thread's (its outermost frame is main; stacks are cut there)
// first, then by lowest rank as the tree orders them.
func mainFirst(roots []*StackNode) []*StackNode {
	out := slices.Clone(roots)
	slices.SortStableFunc(out, func(a, b *StackNode) int {
		am, bm := a.Frame.Func == "main", b.Frame.Func == "main"
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
	return out
}

// label labels each class by where it departs from the biggest (see
// StackClass.Label): each path told from where it parts from the
// biggest class's paths to its innermost frame; should two classes read
// the same, they are told by their whole paths, which tell every two
// classes apart (a path is one node of the tree, and a class its set of
// paths).
func label(classes []StackClass, parent map[*StackNode]*StackNode) {
	if len(classes) == 0 {
		return
	}
	big := classes[0]
	// path is the nodes from a root down to one of the end's.
	path := func(e *stackEnd) []*StackNode {
		var p []*StackNode
		for n := e.nodes[0]; n != nil; n = parent[n] {
			p = append(p, n)
		}
		slices.Reverse(p)
		return p
	}
	// part is the text of a path: whole, or from where the biggest
	// class's ranks leave it.
	part := func(e *stackEnd, whole bool) string {
		p := path(e)
		from := 0
		if !whole {
			for from < len(p)-1 && p[from].Ranks.Intersects(big.Ranks) {
				from++
			}
		}
		texts := make([]string, 0, len(p)-from)
		for _, m := range p[from : len(p)-1] {
			texts = append(texts, frameText(m.Frame))
		}
		texts = append(texts, frameText(e.frame))
		if !whole && len(texts) > 2 {
			texts = []string{texts[0], "…", texts[len(texts)-1]}
		}
		return strings.Join(texts, " > ")
	}
	text := func(c StackClass, whole bool) string {
		if c.Ranks.Equal(big.Ranks) {
			return endsText(c.Ends)
		}
		var parts []string
		// Threads are counted by the function they start in (main,
		// start_thread): a thread elsewhere in main is main's still.
		threads := map[string]int{}
		for _, n := range c.ends {
			threads[path(n)[0].Frame.Func]++
			if !slices.Contains(big.ends, n) {
				parts = append(parts, part(n, whole))
			}
		}
		for _, n := range big.ends {
			threads[path(n)[0].Frame.Func]--
		}
		// A path of the biggest class's that the class lacks is told
		// where the class has fewer threads from its root (it does not
		// have that thread: elsewhere, it would be told as added), or to
		// tell the class apart.
		for _, n := range big.ends {
			if !slices.Contains(c.ends, n) && (whole || threads[path(n)[0].Frame.Func] < 0) {
				parts = append(parts, "without "+part(n, true))
			}
		}
		return strings.Join(parts, "; ")
	}
	seen := map[string]int{}
	for i := range classes {
		classes[i].Label = text(classes[i], false)
		seen[classes[i].Label]++
	}
	for i := range classes {
		if seen[classes[i].Label] > 1 {
			classes[i].Label = text(classes[i], true)
		}
	}
}

// Progress is what several samples tell of the ranks: Moved are those
// whose stacks changed from one sample to the next, Still those that
// answered and did not. Known is false after a single sample, which
// cannot tell; Asked is how many samples were asked for (ranks stopped
// under gdb answer one whatever the count).
type Progress struct {
	Moved, Still   wire.RankSet
	Samples, Asked int
	Known          bool
}

// SampleProgress is the progress of the ranks of the tree, asked samples
// each.
func SampleProgress(t wire.CallTree, asked int) Progress {
	var all wire.RankSet
	for _, r := range t.Roots {
		all = all.Union(r.Ranks)
	}
	moved := t.Moved.Intersect(all)
	return Progress{Moved: moved, Still: all.Minus(moved), Samples: t.Samples, Asked: asked, Known: t.Samples > 1}
}

// Representatives is one rank per class, its lowest: the ranks worth a
// debugger's closer look.
func Representatives(classes []StackClass) wire.RankSet {
	var b wire.Builder
	for _, c := range classes {
		b.Add(c.Ranks.Min())
	}
	return b.Set()
}

// Suggestion is the command that takes a closer look at one rank per
// class: gdb on those ranks only (sdm attach --ranks) when the session
// attached to a running job, which attach names so, else a rank set
// prefix for the session's own commands.
func Suggestion(classes []StackClass, attach string) string {
	if len(classes) == 0 {
		return ""
	}
	reps := Representatives(classes)
	list := rankList(reps)
	if attach != "" {
		return fmt.Sprintf("sdm attach %s --ranks %s", attach, list)
	}
	return fmt.Sprintf("[%s] where", list)
}

// rankList writes every rank of s, comma-separated, as the command line
// takes it, so that a range never hides that one rank stands per class.
func rankList(s wire.RankSet) string {
	var parts []string
	s.Each(func(r int) bool {
		parts = append(parts, fmt.Sprint(r))
		return true
	})
	return strings.Join(parts, ",")
}

// triageText is the classes, the progress and the suggestion as lines.
func triageText(classes []StackClass, p Progress, suggestion string) []string {
	var lines []string
	if len(classes) > 0 {
		lines = append(lines, fmt.Sprintf("%d %s, biggest first:", len(classes), plural(len(classes), "class", "classes")))
		for _, c := range classes {
			line := fmt.Sprintf("  [%v] %d %s: %s", c.Ranks, c.Ranks.Count(), plural(c.Ranks.Count(), "rank", "ranks"), c.Label)
			if c.Outlier {
				line += "  <- outlier"
			}
			lines = append(lines, line)
		}
	}
	switch {
	case !p.Known && p.Asked > 1:
		lines = append(lines, "progress: one sample per rank (ranks stopped under gdb answer one), which cannot tell which ranks move")
	case !p.Known:
		lines = append(lines, "progress: one sample (--samples 2 or more tells which ranks move)")
	case p.Moved.Empty():
		lines = append(lines, fmt.Sprintf("progress over %d samples: no rank moved; [%v] did not", p.Samples, p.Still))
	case p.Still.Empty():
		lines = append(lines, fmt.Sprintf("progress over %d samples: [%v] moved; every rank did", p.Samples, p.Moved))
	default:
		lines = append(lines, fmt.Sprintf("progress over %d samples: [%v] moved; [%v] did not", p.Samples, p.Moved, p.Still))
	}
	if suggestion != "" {
		lines = append(lines, "one rank per class: "+suggestion)
	}
	return lines
}

// endsText names where a class's paths end, the first three of them.
func endsText(ends []wire.Frame) string {
	const most = 3
	parts := make([]string, 0, most+1)
	for i, f := range ends {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(ends)-most))
			break
		}
		parts = append(parts, frameText(f))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// triageJSON is the value of stacks in JSON: the tree, the classes, the
// progress and the suggestion (docs/JSON.md).
func triageJSON(roots []*StackNode, classes []StackClass, p Progress, suggestion string) map[string]any {
	cls := make([]map[string]any, len(classes))
	for i, c := range classes {
		ends := make([]map[string]any, len(c.Ends))
		for j, f := range c.Ends {
			ends[j] = map[string]any{"func": f.Func, "file": f.File, "line": f.Line, "from": f.From}
		}
		cls[i] = map[string]any{"ranks": c.Ranks.String(), "count": c.Ranks.Count(), "outlier": c.Outlier, "ends": ends, "label": c.Label}
	}
	v := map[string]any{"roots": TreeJSON(roots), "classes": cls, "samples": p.Samples, "suggestion": suggestion}
	if p.Known {
		v["moved"], v["still"] = p.Moved.String(), p.Still.String()
	}
	return v
}
