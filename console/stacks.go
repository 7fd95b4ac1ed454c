package console

import (
	"context"
	"fmt"
	"slices"
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

func runStacks(ctx context.Context, c *Console, ranks wire.RankSet, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("stacks takes no arguments")
	}
	groups, err := c.s.Command(ctx, ranks, wire.OpWhere, nil, c.opts.Timeout)
	if err != nil {
		return err
	}
	// Ranks that could not give a stack are listed after the tree.
	var failed []wire.Group
	for _, g := range groups {
		if g.Status != wire.StatusOK {
			failed = append(failed, g)
		}
	}
	roots, err := BuildStackTree(groups)
	if err != nil {
		return err
	}
	if c.opts.JSON {
		for _, r := range roots {
			c.emit(map[string]any{"ranks": r.Ranks.String(), "count": r.Ranks.Count(), "reply": "stacks", "tree": jsonTree(r)})
		}
	} else {
		var b strings.Builder
		for _, r := range roots {
			textTree(&b, r, 0)
		}
		c.println(strings.TrimSuffix(b.String(), "\n"))
	}
	for _, g := range failed {
		c.printReply(wire.OpWhere, g)
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
