package console

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// StackClass is an equivalence class of STAT's: ranks whose whole stacks
// agree, every thread and every sample, so that one rank of the class
// stands for all of them.
type StackClass struct {
	Ranks wire.RankSet
	// Ends are the innermost frames of the class's paths through the
	// tree, in the tree's order.
	Ends []wire.Frame
	// Outlier marks a class smaller than the mean class: the ranks that
	// look different from the many, where a hang usually starts.
	Outlier bool
}

// StackClasses splits the ranks of the tree into classes, biggest
// first (the lowest rank breaks ties). A rank's stacks are the paths
// that end, for it, at a node none of whose children holds it; ranks
// with the same set of such ends are one class. The split works on rank
// sets, path by path, so its cost grows with the number of paths and
// classes, not of ranks. (A thread that stops at a node that another of
// the same rank's threads passes through is not seen as its own path:
// the tree holds ranks, not threads.)
func StackClasses(roots []*StackNode) []StackClass {
	var all wire.RankSet
	for _, r := range roots {
		all = all.Union(r.Ranks)
	}
	if all.Empty() {
		return nil
	}
	classes := []StackClass{{Ranks: all}}
	var walk func(n *StackNode)
	walk = func(n *StackNode) {
		ends := n.Ranks
		for _, c := range n.Children {
			ends = ends.Minus(c.Ranks)
		}
		if !ends.Empty() {
			classes = split(classes, ends, n.Frame)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
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
	return classes
}

// split parts every class into its ranks whose paths end at f and the
// others.
func split(classes []StackClass, ends wire.RankSet, f wire.Frame) []StackClass {
	out := make([]StackClass, 0, len(classes)+1)
	for _, c := range classes {
		in := c.Ranks.Intersect(ends)
		if rest := c.Ranks.Minus(ends); !rest.Empty() {
			out = append(out, StackClass{Ranks: rest, Ends: c.Ends})
		}
		if !in.Empty() {
			out = append(out, StackClass{Ranks: in, Ends: append(slices.Clip(c.Ends), f)})
		}
	}
	return out
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
// attached to a running job through its starter's MPIR, else a rank set
// prefix for the session's own commands.
func Suggestion(classes []StackClass, starter int) string {
	if len(classes) == 0 {
		return ""
	}
	reps := Representatives(classes)
	list := rankList(reps)
	if starter != 0 {
		return fmt.Sprintf("sdm attach --pid %d --ranks %s", starter, list)
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
			line := fmt.Sprintf("  [%v] %d %s: %s", c.Ranks, c.Ranks.Count(), plural(c.Ranks.Count(), "rank", "ranks"), endsText(c.Ends))
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
	trees := make([]map[string]any, len(roots))
	for i, r := range roots {
		trees[i] = jsonTree(r)
	}
	cls := make([]map[string]any, len(classes))
	for i, c := range classes {
		ends := make([]map[string]any, len(c.Ends))
		for j, f := range c.Ends {
			ends[j] = map[string]any{"func": f.Func, "file": f.File, "line": f.Line, "from": f.From}
		}
		cls[i] = map[string]any{"ranks": c.Ranks.String(), "count": c.Ranks.Count(), "outlier": c.Outlier, "ends": ends}
	}
	v := map[string]any{"roots": trees, "classes": cls, "samples": p.Samples, "suggestion": suggestion}
	if p.Known {
		v["moved"], v["still"] = p.Moved.String(), p.Still.String()
	}
	return v
}
