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
}

// Add implements Merger.
func (m *Vars) Add(ranks wire.RankSet, status wire.Status, body []byte) {
	var list []wire.Var
	if status != wire.StatusOK || len(body) == 0 || wire.Decode(body, &list) != nil || len(list) == 1 {
		m.groups.Add(ranks, status, body)
		return
	}
	if len(list) == 0 {
		m.groups.Add(ranks, status, noVars)
		return
	}
	for _, v := range list {
		m.groups.Add(ranks, status, wire.MustEncode([]wire.Var{v}))
	}
}

// noVars is the answer of ranks without variables.
var noVars = wire.MustEncode([]wire.Var{})

// Groups implements Merger.
func (m *Vars) Groups() []wire.Group {
	groups := m.groups.Groups()
	type keyed struct {
		group wire.Group
		place int // the variable's index; after them none, then failures
		name  string
	}
	const last = int(^uint(0) >> 1)
	list := make([]keyed, len(groups))
	for i, g := range groups {
		k := keyed{group: g, place: last - 1}
		var vars []wire.Var
		switch {
		case g.Status != wire.StatusOK || wire.Decode(g.Body, &vars) != nil:
			k.place = last
		case len(vars) > 0:
			k.place, k.name = vars[0].Index, vars[0].Name
		}
		list[i] = k
	}
	slices.SortStableFunc(list, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.place, b.place), cmp.Compare(a.name, b.name),
			cmp.Compare(a.group.Ranks.Min(), b.group.Ranks.Min()))
	})
	for i := range list {
		groups[i] = list[i].group
	}
	return groups
}
