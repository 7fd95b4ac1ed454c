package op

import (
	"cmp"
	"slices"

	"github.com/sdm-hpc/sdm/wire"
)

// Vars is the merger of lists of variables (locals, args, globals): it
// merges them one variable at a time, so that ranks which differ in one
// variable show one group for each of its values and one for each
// variable they share ("[0-7] n = 100", "[0-3] i = 4", "[4-7] i = 5"),
// not a whole list per rank. Each group's answer is a list of one
// variable, or the empty list for ranks that have none; groups come in
// the order of the variables in their frames (wire.Var.Index), then by
// their lowest rank, then ranks without variables, failures last. A group from a node below holds one
// variable already and merges as it is. The zero value is ready to use.
type Vars struct {
	groups Identical
	// places holds where each variable's answer goes among the groups,
	// by its bytes.
	places map[string]place
}

// place is where a variable goes among the groups: by its index in its
// frame, then its name.
type place struct {
	index int
	name  string
}

// Add implements Merger.
func (m *Vars) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	var list []wire.Var
	if status != wire.StatusOK || len(body) == 0 || wire.Decode(body, &list) != nil {
		m.groups.Add(ranks, status, body)
		return
	}
	if len(list) == 0 {
		m.groups.Add(ranks, status, noVars)
		return
	}
	if m.places == nil {
		m.places = make(map[string]place)
	}
	for _, v := range list {
		one := body
		if len(list) > 1 {
			one = wire.MustEncode([]wire.Var{v})
		}
		if _, ok := m.places[string(one)]; !ok {
			m.places[string(one)] = place{v.Index, v.Name}
		}
		m.groups.Add(ranks, status, one)
	}
}

// noVars is the answer of ranks without variables.
var noVars = wire.MustEncode([]wire.Var{})

// Groups implements Merger.
func (m *Vars) Groups() []wire.Group {
	groups := m.groups.Groups()
	type keyed struct {
		group wire.Group
		place
	}
	// After the variables, ranks without any, then failures.
	const last = int(^uint(0) >> 1)
	list := make([]keyed, len(groups))
	for i, g := range groups {
		k := keyed{group: g, place: place{index: last}}
		if g.Status == wire.StatusOK {
			p, ok := m.places[string(g.Body)]
			if !ok {
				p.index = last - 1
			}
			k.place = p
		}
		list[i] = k
	}
	slices.SortStableFunc(list, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.name, b.name),
			cmp.Compare(a.group.Ranks.Min(), b.group.Ranks.Min()))
	})
	for i := range list {
		groups[i] = list[i].group
	}
	return groups
}
