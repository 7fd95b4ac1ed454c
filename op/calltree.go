package op

import "github.com/sdm-hpc/sdm/wire"

// CallTrees is the merger of stack samples (wire.CallTree): every node of
// the tree merges the trees of its sources into one, with the ranks
// inside its nodes, as STAT's tree does, so that what travels up and what
// the front end receives grows with the number of distinct paths, not
// with the number of ranks. Failures merge as Identical merges them. The
// zero value is ready to use.
type CallTrees struct {
	tree     wire.CallTree
	ranks    wire.Builder
	any      bool
	failures Identical
}

// Add implements Merger.
func (m *CallTrees) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	var t wire.CallTree
	if status != wire.StatusOK || wire.Decode(body, &t) != nil {
		m.failures.Add(ranks, status, body)
		return
	}
	m.tree.Merge(t)
	m.ranks.AddSet(ranks)
	m.any = true
}

// Groups implements Merger: the merged tree, as one group of every rank
// that answered, and the failures.
func (m *CallTrees) Groups() []wire.Group {
	groups := m.failures.Groups()
	if !m.any {
		return groups
	}
	m.tree.Sort()
	return inOrder(groups, wire.Group{Ranks: m.ranks.Set(), Status: wire.StatusOK, Body: wire.MustEncode(m.tree)})
}

// inOrder puts the one answer of a merger that folds every rank's into
// one among the failures, which are ordered by their lowest rank.
func inOrder(failures []wire.Group, ok wire.Group) []wire.Group {
	for i, g := range failures {
		if g.Ranks.Min() > ok.Ranks.Min() {
			return append(failures[:i], append([]wire.Group{ok}, failures[i:]...)...)
		}
	}
	return append(failures, ok)
}
