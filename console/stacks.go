package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// StackNode is a node of the merged call-prefix tree (as in STAT): the
// ranks whose stacks share the path from the root down to Frame.
type StackNode struct {
	Frame    wire.Frame
	Ranks    wire.RankSet
	Children []*StackNode
}

// BuildStackTree merges the stacks of the groups (answers to where) into
// one tree per outermost frame, children ordered by their lowest rank.
func BuildStackTree(groups []wire.Group) ([]*StackNode, error) {
	var t wire.CallTree
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			continue
		}
		var st wire.Stack
		if err := wire.Decode(g.Body, &st); err != nil {
			return nil, fmt.Errorf("ranks %v: %w", g.Ranks, err)
		}
		t.AddStackOf(g.Ranks, st.Frames)
	}
	return callTreeNodes(t.Roots), nil
}

// TreeOf is a tree of samples, as the tree merged it, in the console's
// shape.
func TreeOf(t wire.CallTree) []*StackNode { return callTreeNodes(t.Roots) }

// callTreeNodes is a tree of samples, as the tree merged it, in the
// console's shape.
func callTreeNodes(nodes []wire.CallNode) []*StackNode {
	out := make([]*StackNode, len(nodes))
	for i, n := range nodes {
		out[i] = &StackNode{Frame: n.Frame, Ranks: n.Ranks, Children: callTreeNodes(n.Children)}
	}
	top := &StackNode{Children: out}
	top.sort()
	return top.Children
}

// showCallTree prints a tree of samples as stacks prints its tree.
func showCallTree(t wire.CallTree) (any, []string) {
	var b strings.Builder
	roots := callTreeNodes(t.Roots)
	for _, r := range roots {
		textTree(&b, r, 0)
	}
	return map[string]any{"roots": TreeJSON(roots), "moved": t.Moved.String(), "samples": t.Samples},
		strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// sort orders the children by lowest rank, a main thread's before the
// other threads' (mainFirst).
func (n *StackNode) sort() {
	slices.SortFunc(n.Children, func(a, b *StackNode) int { return a.Ranks.Min() - b.Ranks.Min() })
	n.Children = mainFirst(n.Children)
	for _, c := range n.Children {
		c.sort()
	}
}

// stacksUsage is how stacks is typed.
const stacksUsage = "stacks [--samples K] [--interval D] [--dot FILE] [--svg FILE] [--deadlock]"

// StacksRequest is what stacks asks of the ranks, where it draws the
// tree, and whether deadlock's diagnosis follows it.
type StacksRequest struct {
	Sample   wire.Sample
	Dot, SVG string
	Deadlock bool
}

// ParseStacks reads the arguments of stacks. One sample is the default
// in a session: its ranks are mostly stopped under gdb, where more
// samples cannot differ and would only cost the interval.
func ParseStacks(args string) (StacksRequest, error) {
	r := StacksRequest{Sample: wire.Sample{Count: 1, Interval: DefaultInterval}}
	f := strings.Fields(args)
	for i := 0; i < len(f); i += 2 {
		if f[i] == "--deadlock" {
			r.Deadlock = true
			i--
			continue
		}
		if i+1 == len(f) {
			return r, usageError("%s needs a value: %s", f[i], stacksUsage)
		}
		v := f[i+1]
		switch f[i] {
		case "--dot":
			r.Dot = v
		case "--svg":
			r.SVG = v
		case "--samples":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxSamples {
				return r, usageError("--samples %s: want a count from 1 to %d", v, MaxSamples)
			}
			r.Sample.Count = n
		case "--interval":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > MaxInterval {
				return r, usageError("--interval %s: want a duration up to %v, such as 100ms", v, MaxInterval)
			}
			r.Sample.Interval = d
		default:
			return r, usageError("%s", stacksUsage)
		}
	}
	return r, nil
}

// Line is the console's stacks command for r, checked as the console
// checks it.
func (r StacksRequest) Line() (string, error) {
	line := fmt.Sprintf("stacks --samples %d --interval %v", r.Sample.Count, r.Sample.Interval)
	for flag, file := range map[string]string{"--dot": r.Dot, "--svg": r.SVG} {
		if strings.ContainsAny(file, " \t") {
			return "", usageError("%s %q: a file name without spaces, please", flag, file)
		}
		if file != "" {
			line += " " + flag + " " + file
		}
	}
	if r.Deadlock {
		line += " --deadlock"
	}
	_, err := ParseStacks(strings.TrimPrefix(line, "stacks"))
	return line, err
}

// The bounds of sampling: enough to watch a job for minutes, never so
// much that a typo holds the ranks' servers for hours.
const (
	MaxSamples      = 1000
	MaxInterval     = time.Minute
	DefaultInterval = 100 * time.Millisecond
)

// sample asks ranks for their stacks: the merged tree, the ranks in it,
// and every group of answers, the failed among them.
func (c *Console) sample(ctx context.Context, ranks wire.RankSet, req wire.Sample) (tree wire.CallTree, answered wire.RankSet, groups []wire.Group, err error) {
	// The ranks sample for (Count-1) intervals before they answer.
	wait := c.opts.Timeout + time.Duration(req.Count-1)*req.Interval
	groups, err = c.s.Command(ctx, ranks, wire.OpSample, wire.MustEncode(req), wait)
	if err != nil {
		return tree, answered, nil, err
	}
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			continue
		}
		var t wire.CallTree
		if err := wire.Decode(g.Body, &t); err != nil {
			return tree, answered, nil, fmt.Errorf("ranks %v: %w", g.Ranks, err)
		}
		tree.Merge(t)
		answered = answered.Union(g.Ranks)
	}
	return tree, answered, groups, nil
}

// printUnsampled prints the ranks of groups (answers to sample) that
// gave no stack, and why.
func (c *Console) printUnsampled(ctx context.Context, groups []wire.Group) {
	groups, gones := c.goneOf(ctx, wire.OpSample, groups)
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			c.printReply(wire.OpSample, "", g)
		}
	}
	c.printGone(wire.OpSample, gones)
}

func runStacks(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	req, err := ParseStacks(args)
	if err != nil {
		return err
	}
	tree, answered, groups, err := c.sample(ctx, ranks, req.Sample)
	if err != nil {
		return err
	}
	roots := callTreeNodes(tree.Roots)
	classes := StackClasses(roots)
	progress := SampleProgress(tree, req.Sample.Count)
	suggestion := Suggestion(classes, c.opts.Attach)
	var d Diagnosis
	if req.Deadlock {
		d = c.diagnose(ctx, tree, answered)
	}
	if c.opts.JSON {
		if !answered.Empty() {
			value := triageJSON(roots, classes, progress, suggestion)
			if req.Deadlock {
				value["deadlock"] = d.JSON()
			}
			c.emit(map[string]any{"ranks": answered.String(), "count": answered.Count(), "op": "stacks", "status": "ok", "value": value})
		}
	} else if len(roots) > 0 {
		var b strings.Builder
		for _, r := range roots {
			textTree(&b, r, 0)
		}
		c.println(strings.TrimSuffix(b.String(), "\n"))
		c.println(strings.Join(triageText(classes, progress, suggestion), "\n"))
		if req.Deadlock {
			c.println(strings.Join(d.Lines, "\n"))
		}
	}
	// Ranks that could not give a stack are listed after the tree.
	c.printUnsampled(ctx, groups)
	if req.Dot != "" {
		if err := os.WriteFile(req.Dot, []byte(DOT(roots)), 0o644); err != nil {
			return err
		}
	}
	if req.SVG != "" {
		return writeSVG(ctx, req.SVG, DOT(roots))
	}
	return nil
}

// DOT draws the stack tree in Graphviz's language: one box per node with
// its function, file:line, rank set and count, the ranks' paths as edges.
func DOT(roots []*StackNode) string {
	var b strings.Builder
	b.WriteString("digraph stacks {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n")
	next := 0
	var walk func(n *StackNode) int
	walk = func(n *StackNode) int {
		id := next
		next++
		where := n.Frame.From
		if n.Frame.File != "" {
			where = fmt.Sprintf("%s:%d", n.Frame.File, n.Frame.Line)
		}
		label := fmt.Sprintf("%s\n%s\n[%v] %d", n.Frame.Func, where, n.Ranks, n.Ranks.Count())
		fmt.Fprintf(&b, "  n%d [label=%s];\n", id, dotQuote(label))
		for _, c := range n.Children {
			fmt.Fprintf(&b, "  n%d -> n%d;\n", id, walk(c))
		}
		return id
	}
	for _, r := range roots {
		walk(r)
	}
	b.WriteString("}\n")
	return b.String()
}

// dotQuote quotes s as a string of Graphviz's language, its line breaks
// as \n, which Graphviz draws as centred lines. (Go's quoting would do for
// the breaks, but it escapes other characters in ways Graphviz reads as
// they are.)
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// writeSVG has Graphviz's dot draw the tree.
func writeSVG(ctx context.Context, path, dot string) error {
	bin, err := exec.LookPath("dot")
	if err != nil {
		return fmt.Errorf("stacks --svg needs Graphviz's dot (apt-get install graphviz); --dot FILE writes the source instead")
	}
	cmd := exec.CommandContext(ctx, bin, "-Tsvg", "-o", path)
	cmd.Stdin = strings.NewReader(dot)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dot: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func textTree(b *strings.Builder, n *StackNode, depth int) {
	count := n.Ranks.Count()
	plural := "s"
	if count == 1 {
		plural = ""
	}
	fmt.Fprintf(b, "%s[%v] %s (%d rank%s)\n", strings.Repeat("  ", depth), n.Ranks, frameText(n.Frame), count, plural)
	for _, c := range n.Children {
		textTree(b, c, depth+1)
	}
}

// TreeNode is a node of the stack tree as --json gives it (docs/JSON.md),
// and the editor's sdm/stacks and sdm report read it.
type TreeNode struct {
	Func     string     `json:"func"`
	File     string     `json:"file"`
	Line     int        `json:"line"`
	Ranks    string     `json:"ranks"`
	Count    int        `json:"count"`
	Children []TreeNode `json:"children"`
}

// TreeJSON is a stack tree as --json gives it.
func TreeJSON(roots []*StackNode) []TreeNode {
	out := make([]TreeNode, len(roots))
	for i, n := range roots {
		out[i] = TreeNode{Func: n.Frame.Func, File: n.Frame.File, Line: n.Frame.Line, Ranks: n.Ranks.String(),
			Count: n.Ranks.Count(), Children: TreeJSON(n.Children)}
	}
	return out
}
