package sdm

import (
	"slices"

	"github.com/sdm-hpc/sdm/wire"
)

// Merger folds answers into one group per distinct (status, body): the
// tree's reduction. It knows nothing of what the bodies mean.
type Merger struct {
	index   map[string]int
	groups  []mergeGroup
	scratch []byte
}

type mergeGroup struct {
	status wire.Status
	body   []byte
	ranks  wire.Builder
}

// Add merges the answer body with status given by ranks.
func (m *Merger) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	m.groups[m.lookup(status, body)].ranks.AddSet(ranks)
}

// AddRank is Add for a single rank, the common case at the leaves.
func (m *Merger) AddRank(rank int, status wire.Status, body []byte) {
	m.groups[m.lookup(status, body)].ranks.Add(rank)
}

func (m *Merger) lookup(status wire.Status, body []byte) int {
	if m.index == nil {
		m.index = make(map[string]int)
	}
	// The key is the status byte followed by the body; the map lookup with
	// string(key) does not allocate, so merging a million answers is cheap.
	m.scratch = append(append(m.scratch[:0], byte(status)), body...)
	if i, ok := m.index[string(m.scratch)]; ok {
		return i
	}
	m.index[string(m.scratch)] = len(m.groups)
	m.groups = append(m.groups, mergeGroup{status: status, body: body})
	return len(m.groups) - 1
}

// Len returns the number of distinct answers so far.
func (m *Merger) Len() int { return len(m.groups) }

// Groups returns the merged answers ordered by their lowest rank, so that
// equal inputs give equal outputs whatever order they arrived in.
func (m *Merger) Groups() []wire.Group {
	out := make([]wire.Group, 0, len(m.groups))
	for i := range m.groups {
		g := &m.groups[i]
		out = append(out, wire.Group{Ranks: g.ranks.Set(), Status: g.status, Body: g.body})
	}
	slices.SortFunc(out, func(a, b wire.Group) int { return a.Ranks.Min() - b.Ranks.Min() })
	return out
}
