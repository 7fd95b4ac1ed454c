package op

import (
	"bytes"
	"slices"

	"github.com/sdm-hpc/sdm/wire"
)

// Merger folds the answers of many ranks to one command into groups: the
// tree's reduction, applied by every node to the answers of its sources.
// Equal inputs must give equal groups whatever order they arrived in, and
// failures (any status but ok) merge when status and reason are equal.
type Merger interface {
	// Add merges the answer body with status given by ranks.
	Add(ranks wire.RankSet, status wire.Status, body []byte)
	// Groups returns the merged answers ordered by their lowest rank.
	Groups() []wire.Group
}

// Identical is the merger that makes one group per distinct status and
// body bytes. It knows nothing of what the bodies mean. The zero value is
// ready to use.
type Identical struct {
	index   map[string]int
	groups  []identicalGroup
	scratch []byte
}

type identicalGroup struct {
	status wire.Status
	body   []byte
	ranks  wire.Builder
}

// Add implements Merger.
func (m *Identical) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	m.groups[m.lookup(status, body)].ranks.AddSet(ranks)
}

// AddRank is Add for a single rank, the common case at the leaves.
func (m *Identical) AddRank(rank int, status wire.Status, body []byte) {
	m.groups[m.lookup(status, body)].ranks.Add(rank)
}

// linearGroups is how many distinct groups a merger tells apart by
// comparing bodies before it indexes them: most commands have a handful
// of distinct answers, and a rank server's merger sees one, for which an
// index would be most of what the command allocates.
const linearGroups = 8

func (m *Identical) lookup(status wire.Status, body []byte) int {
	if m.index == nil {
		for i := range m.groups {
			if g := &m.groups[i]; g.status == status && bytes.Equal(g.body, body) {
				return i
			}
		}
		if len(m.groups) < linearGroups {
			m.groups = append(m.groups, identicalGroup{status: status, body: body})
			return len(m.groups) - 1
		}
		m.index = make(map[string]int, 2*linearGroups)
		for i, g := range m.groups {
			m.index[string(g.key(m.scratch[:0]))] = i
		}
	}
	// The map lookup with string(key) does not allocate, so merging a
	// million answers is cheap.
	m.scratch = identicalGroup{status: status, body: body}.key(m.scratch[:0])
	i, ok := m.index[string(m.scratch)]
	if !ok {
		i = len(m.groups)
		m.index[string(m.scratch)] = i
		m.groups = append(m.groups, identicalGroup{status: status, body: body})
	}
	return i
}

// key appends g's index key to b: the status byte, then the body.
func (g identicalGroup) key(b []byte) []byte {
	return append(append(b, byte(g.status)), g.body...)
}

// Groups implements Merger.
func (m *Identical) Groups() []wire.Group {
	out := make([]wire.Group, 0, len(m.groups))
	for i := range m.groups {
		g := &m.groups[i]
		out = append(out, wire.Group{Ranks: g.ranks.Set(), Status: g.status, Body: g.body})
	}
	slices.SortFunc(out, func(a, b wire.Group) int { return a.Ranks.Min() - b.Ranks.Min() })
	return out
}
