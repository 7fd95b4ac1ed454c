package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

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
	root := &StackNode{}
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			continue
		}
		var st wire.Stack
		if err := wire.Decode(g.Body, &st); err != nil {
			return nil, fmt.Errorf("ranks %v: %w", g.Ranks, err)
		}
		node := root
		for i := len(st.Frames) - 1; i >= 0; i-- {
			node = node.child(st.Frames[i])
			node.Ranks = node.Ranks.Union(g.Ranks)
		}
	}
	root.sort()
	return root.Children, nil
}

func (n *StackNode) child(f wire.Frame) *StackNode {
	for _, c := range n.Children {
		if c.Frame == f {
			return c
		}
	}
	c := &StackNode{Frame: f}
	n.Children = append(n.Children, c)
	return c
}

func (n *StackNode) sort() {
	slices.SortFunc(n.Children, func(a, b *StackNode) int { return a.Ranks.Min() - b.Ranks.Min() })
	for _, c := range n.Children {
		c.sort()
	}
}

func runStacks(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	var dotFile, svgFile string
	f := strings.Fields(args)
	for i := 0; i < len(f); i++ {
		if (f[i] != "--dot" && f[i] != "--svg") || i+1 == len(f) {
			return usageError("stacks [--dot FILE] [--svg FILE]")
		}
		if f[i] == "--dot" {
			dotFile = f[i+1]
		} else {
			svgFile = f[i+1]
		}
		i++
	}
	groups, err := c.s.Command(ctx, ranks, wire.OpWhere, nil, c.opts.Timeout)
	if err != nil {
		return err
	}
	roots, err := BuildStackTree(groups)
	if err != nil {
		return err
	}
	if c.opts.JSON {
		for _, r := range roots {
			c.emit(map[string]any{"ranks": r.Ranks.String(), "count": r.Ranks.Count(), "reply": "stacks", "tree": jsonTree(r)})
		}
	} else if len(roots) > 0 {
		var b strings.Builder
		for _, r := range roots {
			textTree(&b, r, 0)
		}
		c.println(strings.TrimSuffix(b.String(), "\n"))
	}
	// Ranks that could not give a stack are listed after the tree.
	groups, gones := c.goneOf(ctx, wire.OpWhere, groups)
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			c.printReply(wire.OpWhere, "", g)
		}
	}
	c.printGone(wire.OpWhere, gones)
	if dotFile != "" {
		if err := os.WriteFile(dotFile, []byte(DOT(roots)), 0o644); err != nil {
			return err
		}
	}
	if svgFile != "" {
		return writeSVG(ctx, svgFile, DOT(roots))
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
		label := fmt.Sprintf("%s\\n%s\\n[%v] %d", n.Frame.Func, where, n.Ranks, n.Ranks.Count())
		fmt.Fprintf(&b, "  n%d [label=%s];\n", id, strconv.Quote(label))
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

func jsonTree(n *StackNode) map[string]any {
	kids := make([]map[string]any, len(n.Children))
	for i, c := range n.Children {
		kids[i] = jsonTree(c)
	}
	return map[string]any{
		"func": n.Frame.Func, "file": n.Frame.File, "line": n.Frame.Line,
		"ranks": n.Ranks.String(), "count": n.Ranks.Count(), "children": kids,
	}
}
