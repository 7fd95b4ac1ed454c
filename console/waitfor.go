package console

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// The wait-for graph of ranks blocked in MPI, from their queues: a rank
// blocked in a call that needs one given rank (a receive from it, a send
// to it, a wait on a request of one) waits for that rank (an AND arc);
// one that any of several may release (MPI_ANY_SOURCE, MPI_Waitany) has
// OR arcs; a rank in a collective waits for the members of its
// communicator that are not in it. A blocked rank can be released when
// all its AND arcs (or one of its OR arcs) lead to ranks that can; ranks
// that are not blocked (computing, or without queues) can. The blocked
// ranks that cannot are deadlocked: those on cycles are the cause, the
// others wait for them.

// waitFor is the graph.
type waitFor struct {
	blocked map[int]wire.MPIOp // a blocked rank's blocking call
	what    map[int]string     // that call, for people
	and, or map[int][]int      // the ranks a blocked rank waits for
	members map[int]wire.RankSet
	sends   map[int][]sendOp // each rank's sends in flight, blocking or posted
	// underway are the ranks in a wait whose requests can all complete:
	// nonblocking collectives every member has posted.
	underway map[int]bool
}

// sendOp is a send in flight and the world ranks of its communicator.
type sendOp struct {
	op      wire.MPIOp
	members wire.RankSet
}

// inCall says whether a call blocks its rank until other ranks act.
func inCall(o wire.MPIOp) bool {
	call, ok := mpiCall(o.Call)
	return ok && call.Kind != "" && !o.Request
}

// buildWaitFor makes the graph of the ranks' queues, in a world of size
// ranks.
func buildWaitFor(queues map[int]wire.Queues, size int) waitFor {
	g := waitFor{blocked: map[int]wire.MPIOp{}, what: map[int]string{}, and: map[int][]int{}, or: map[int][]int{},
		members: map[int]wire.RankSet{}, sends: map[int][]sendOp{}, underway: map[int]bool{}}
	world := wire.Range(0, size-1)
	membersOf := func(r int, o wire.MPIOp) wire.RankSet {
		switch o.Comm {
		case 0:
			return world
		case commUnknown:
			return anyMembers(queues[r], world)
		}
		if m, ok := queues[r].Comms[o.Comm]; ok {
			return m
		}
		return wire.RankSet{}
	}
	inColl, posted := g.gather(queues, size, membersOf)
	for r, o := range g.blocked {
		c, _ := mpiCall(o.Call)
		switch {
		case c.Kind == "collective" && o.Comm == commUnknown:
			g.members[r].Minus(wire.Single(r)).Each(func(m int) bool {
				g.or[r] = append(g.or[r], m)
				return true
			})
		case c.Kind == "collective":
			missing := g.members[r].Minus(inColl[collKey{g.members[r].String(), o.Call}])
			missing.Each(func(m int) bool {
				g.and[r] = append(g.and[r], m)
				return true
			})
		case c.Kind == "completion":
			peers, complete := awaited(r, queues[r].Ops, membersOf, posted)
			g.underway[r] = complete && len(peers) == 0 && slices.ContainsFunc(queues[r].Ops, func(p wire.MPIOp) bool { return p.Request })
			if o.Call == "MPI_Waitall" || len(peers) == 1 {
				g.and[r] = peers
			} else {
				g.or[r] = peers
			}
		case o.Peer >= 0:
			g.and[r] = []int{o.Peer}
		case o.Peer == wire.AnySource:
			g.members[r].Minus(wire.Single(r)).Each(func(m int) bool {
				g.or[r] = append(g.or[r], m)
				return true
			})
		}
	}
	return g
}

// collKey is a collective by its communicator (its members) and call.
type collKey struct{ members, call string }

// gather notes each rank's sends, the call it blocks in, and the ranks
// in each collective: those blocked in it, and those that posted a
// nonblocking one.
func (g *waitFor) gather(queues map[int]wire.Queues, size int, membersOf func(int, wire.MPIOp) wire.RankSet) (inColl, posted map[collKey]wire.RankSet) {
	inColl, posted = map[collKey]wire.RankSet{}, map[collKey]wire.RankSet{}
	for r, q := range queues {
		for _, o := range q.Ops {
			if sends(o) && !receives(o) && o.Peer >= 0 && (o.Request || inCall(o)) {
				g.sends[r] = append(g.sends[r], sendOp{o, membersOf(r, o)})
			}
			if o.Request && postedCollective(o.Call) {
				k := collKey{membersOf(r, o).String(), o.Call}
				posted[k] = posted[k].Union(wire.Single(r))
			}
		}
		for _, o := range q.Ops {
			if inCall(o) {
				g.blocked[r], g.members[r] = o, membersOf(r, o)
				abs, _ := pendingText(o, r, size)
				g.what[r] = abs
				if c, _ := mpiCall(o.Call); c.Kind == "collective" {
					k := collKey{g.members[r].String(), o.Call}
					inColl[k] = inColl[k].Union(wire.Single(r))
				}
				break
			}
		}
	}
	return inColl, posted
}

// awaited are the peers of the requests rank r waits on (a nonblocking
// collective's: the members that have not posted it), and whether every
// one of its requests can complete.
func awaited(r int, ops []wire.MPIOp, membersOf func(int, wire.MPIOp) wire.RankSet, posted map[collKey]wire.RankSet) ([]int, bool) {
	var peers []int
	complete := true
	for _, p := range ops {
		switch {
		case p.Request && p.Peer >= 0:
			peers = append(peers, p.Peer)
		case p.Request && postedCollective(p.Call):
			m := membersOf(r, p)
			m.Minus(posted[collKey{m.String(), p.Call}]).Each(func(x int) bool {
				peers = append(peers, x)
				return true
			})
		case p.Request:
			complete = false
		}
	}
	slices.Sort(peers)
	return slices.Compact(peers), complete
}

// postedCollective says whether call starts a nonblocking collective
// (MPI_Ibarrier, MPI_Iallreduce, …): its request completes when every
// member of its communicator has posted the same.
func postedCollective(call string) bool {
	rest, ok := strings.CutPrefix(call, "MPI_I")
	return ok && blocking[strings.ToLower(rest)] == "collective"
}

// matched says whether rank r's blocking point-to-point call and its
// peer's match each other (a send and a receive between them, tags
// agreeing): both are then under way, not waiting.
func (g waitFor) matched(r int) bool {
	o, ok := g.blocked[r]
	if !ok || o.Peer < 0 {
		return false
	}
	p, ok := g.blocked[o.Peer]
	if !ok || p.Peer != r || o.Comm != p.Comm && g.members[r].String() != g.members[o.Peer].String() {
		return false
	}
	tags := o.Tag == p.Tag || o.Tag == wire.AnyTag || p.Tag == wire.AnyTag
	return tags && (receives(o) && sends(p) || sends(o) && receives(p))
}

// collectives are the communicators whose members are in different
// collective calls: calls that do not match.
func (g waitFor) collectives(size int) []string {
	type call struct{ comm, name string }
	in := map[call]wire.RankSet{}
	byComm := map[string][]string{}
	for r, o := range g.blocked {
		if c, _ := mpiCall(o.Call); c.Kind != "collective" {
			continue
		}
		k := call{g.members[r].String(), o.Call}
		if in[k].Empty() {
			byComm[k.comm] = append(byComm[k.comm], o.Call)
		}
		in[k] = in[k].Union(wire.Single(r))
	}
	var out []string
	for _, comm := range slices.Sorted(maps.Keys(byComm)) {
		calls := byComm[comm]
		if len(calls) < 2 {
			continue
		}
		slices.SortFunc(calls, func(a, b string) int { return in[call{comm, a}].Min() - in[call{comm, b}].Min() })
		parts := make([]string, len(calls))
		for i, c := range calls {
			r := in[call{comm, c}]
			parts[i] = fmt.Sprintf("%s %v in %s", rankWord(r), r, c)
		}
		name := "the communicator of ranks " + comm
		if comm == wire.Range(0, size-1).String() {
			name = "MPI_COMM_WORLD"
		}
		out = append(out, fmt.Sprintf("collectives that do not match on %s: %s", name, strings.Join(parts, ", ")))
	}
	return out
}

// receives and sends say whether a call receives or sends; MPI_Sendrecv
// does both (it waits for its receive, whose peer it holds).
func receives(x wire.MPIOp) bool {
	c := strings.ToLower(x.Call)
	return strings.Contains(c, "recv") || strings.Contains(c, "probe") || x.Call == wire.PostedRecv
}

func sends(x wire.MPIOp) bool { return strings.Contains(strings.ToLower(x.Call), "send") }

// mismatches are the blocked receives whose peer sends to them, blocked
// or posted, only with other tags: no send matches the receive.
func (g waitFor) mismatches() []string {
	var out []string
	for _, r := range slices.Sorted(maps.Keys(g.blocked)) {
		o := g.blocked[r]
		if !receives(o) || o.Peer < 0 || o.Tag == wire.AnyTag {
			continue
		}
		var tags []string
		for _, send := range g.sends[o.Peer] {
			p := send.op
			if p.Peer != r || g.members[r].String() != send.members.String() {
				continue
			}
			if p.Tag == o.Tag || p.Tag == wire.AnyTag {
				tags = nil
				break
			}
			tags = append(tags, fmt.Sprint(p.Tag))
		}
		if len(tags) > 0 {
			out = append(out, fmt.Sprintf("rank %d waits for tag %d from rank %d, which sends it tag %s: no send matches the receive",
				r, o.Tag, o.Peer, strings.Join(tags, ", ")))
		}
	}
	return out
}

// stuck are the blocked ranks that no rank can release.
func (g waitFor) stuck() wire.RankSet {
	released := map[int]bool{}
	for r := range g.blocked {
		if g.matched(r) || g.underway[r] {
			released[r] = true
		}
	}
	free := func(r int) bool {
		_, blocked := g.blocked[r]
		return !blocked || released[r]
	}
	for changed := true; changed; {
		changed = false
		for r := range g.blocked {
			if released[r] {
				continue
			}
			ok := len(g.and[r]) > 0 || len(g.or[r]) > 0
			for _, t := range g.and[r] {
				ok = ok && free(t)
			}
			if len(g.or[r]) > 0 && !slices.ContainsFunc(g.or[r], free) {
				ok = false
			}
			if ok {
				released[r], changed = true, true
			}
		}
	}
	var b wire.Builder
	for r := range g.blocked {
		if !released[r] {
			b.Add(r)
		}
	}
	return b.Set()
}

// cycles are the strongly connected parts of the stuck ranks' graph that
// hold a cycle, each in rank order.
func (g waitFor) cycles(stuck wire.RankSet) [][]int {
	index, low, on := map[int]int{}, map[int]int{}, map[int]bool{}
	var stack []int
	var out [][]int
	next := 0
	var visit func(r int)
	visit = func(r int) {
		index[r], low[r] = next, next
		next++
		stack = append(stack, r)
		on[r] = true
		for _, t := range append(slices.Clone(g.and[r]), g.or[r]...) {
			if !stuck.Contains(t) {
				continue
			}
			if _, seen := index[t]; !seen {
				visit(t)
				low[r] = min(low[r], low[t])
			} else if on[t] {
				low[r] = min(low[r], index[t])
			}
		}
		if low[r] != index[r] {
			return
		}
		var part []int
		for {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[t] = false
			part = append(part, t)
			if t == r {
				break
			}
		}
		if len(part) > 1 || slices.Contains(append(slices.Clone(g.and[r]), g.or[r]...), r) {
			slices.Sort(part)
			out = append(out, part)
		}
	}
	stuck.Each(func(r int) bool {
		if _, seen := index[r]; !seen {
			visit(r)
		}
		return true
	})
	return out
}

// lines says what the graph shows: each cycle, the ranks outside MPI that
// blocked ranks wait for (busy, with where they are), and collectives
// whose communicator's members are in other calls.
func (g waitFor) lines(size int, busy map[int]string) []string {
	var lines []string
	stuck := g.stuck()
	cycles := g.cycles(stuck)
	for _, c := range cycles {
		lines = append(lines, g.cycleText(c, size))
	}
	lines = append(lines, g.mismatches()...)
	lines = append(lines, g.collectives(size)...)
	var onCycles wire.RankSet
	for _, c := range cycles {
		for _, r := range c {
			onCycles = onCycles.Union(wire.Single(r))
		}
	}
	if behind := stuck.Minus(onCycles); !behind.Empty() && !onCycles.Empty() {
		lines = append(lines, fmt.Sprintf("%s %v %s for the ranks of the cycle, and %s released when it is", rankWord(behind), behind, waitVerb(behind), plural(behind.Count(), "is not", "are not")))
	}
	// Ranks that blocked ranks lead to, which are not in MPI.
	waitsFor := map[int]wire.RankSet{}
	for r := range g.blocked {
		for _, t := range append(slices.Clone(g.and[r]), g.or[r]...) {
			if _, blocked := g.blocked[t]; !blocked {
				waitsFor[t] = waitsFor[t].Union(wire.Single(r))
			}
		}
	}
	roots := slices.Sorted(func(yield func(int) bool) {
		for t := range waitsFor {
			if !yield(t) {
				return
			}
		}
	})
	for _, t := range roots {
		where := busy[t]
		if where == "" {
			where = "not blocked in MPI"
		}
		lines = append(lines, fmt.Sprintf("%s %v %s for rank %d, which is %s", rankWord(waitsFor[t]), waitsFor[t], waitVerb(waitsFor[t]), t, where))
	}
	if len(lines) == 0 && !stuck.Empty() {
		lines = append(lines, fmt.Sprintf("%s %v cannot be released, though on no cycle: they wait for ranks whose queues are unknown", rankWord(stuck), stuck))
	}
	return lines
}

// cycleText tells a cycle: at scale by its pattern ("ranks 0-511 each
// wait in MPI_Send to rank+1"), else rank by rank.
func (g waitFor) cycleText(c []int, size int) string {
	var b wire.Builder
	texts := map[string]bool{}
	for _, r := range c {
		b.Add(r)
		_, rel := pendingText(g.blocked[r], r, size)
		texts[rel] = true
	}
	ranks := b.Set()
	if len(texts) == 1 && len(c) > 2 {
		for t := range texts {
			return fmt.Sprintf("deadlock: a cycle of %d ranks: ranks %v each wait in %s", len(c), ranks, t)
		}
	}
	var steps []string
	for i, r := range c {
		if i == 6 {
			steps = append(steps, fmt.Sprintf("and %d more", len(c)-i))
			break
		}
		var on []int
		for _, t := range append(slices.Clone(g.and[r]), g.or[r]...) {
			if slices.Contains(c, t) {
				on = append(on, t)
			}
		}
		steps = append(steps, fmt.Sprintf("rank %d waits for %s in %s", r, orList(on), g.what[r]))
	}
	return fmt.Sprintf("deadlock: a cycle of %d ranks: %s", len(c), strings.Join(steps, "; "))
}

// orList is ranks as "3" or "3 or 5".
func orList(ranks []int) string {
	s := make([]string, len(ranks))
	for i, r := range ranks {
		s[i] = fmt.Sprint(r)
	}
	return strings.Join(s, " or ")
}

// dot draws the graph in Graphviz's language: a node per set of ranks
// whose call reads alike relative to each rank (a ring's ranks are one
// node), or that are outside MPI at one place (busy), arcs where ranks of
// one wait for ranks of another (dashed where any one would do).
func (g waitFor) dot(size int, busy map[int]string) string {
	// A call told by its peer's number or its offset from the rank,
	// whichever more ranks share, as queues tells it.
	abs, rel, count := map[int]string{}, map[int]string{}, map[string]int{}
	for r, o := range g.blocked {
		abs[r], rel[r] = pendingText(o, r, size)
		count[abs[r]]++
		if rel[r] != abs[r] {
			count[rel[r]]++
		}
	}
	key := func(r int) string {
		if _, ok := g.blocked[r]; ok {
			if count[rel[r]] > count[abs[r]] {
				return rel[r]
			}
			return abs[r]
		}
		if b := busy[r]; b != "" {
			return b
		}
		return "not blocked in MPI"
	}
	ranks := map[string]wire.RankSet{}
	type arc struct {
		from, to string
		or       bool
	}
	arcs := map[arc]bool{}
	for r := range g.blocked {
		ranks[key(r)] = ranks[key(r)].Union(wire.Single(r))
		for _, t := range g.and[r] {
			ranks[key(t)] = ranks[key(t)].Union(wire.Single(t))
			arcs[arc{key(r), key(t), false}] = true
		}
		for _, t := range g.or[r] {
			ranks[key(t)] = ranks[key(t)].Union(wire.Single(t))
			arcs[arc{key(r), key(t), true}] = true
		}
	}
	keys := slices.Sorted(maps.Keys(ranks))
	id := map[string]int{}
	var b strings.Builder
	b.WriteString("digraph waits {\n  node [shape=box, fontname=\"monospace\"];\n")
	for i, k := range keys {
		id[k] = i
		fmt.Fprintf(&b, "  n%d [label=%s];\n", i, dotQuote(fmt.Sprintf("[%v] %d\n%s", ranks[k], ranks[k].Count(), k)))
	}
	for _, a := range slices.SortedFunc(maps.Keys(arcs), func(x, y arc) int {
		return strings.Compare(x.from+"\x00"+x.to, y.from+"\x00"+y.to)
	}) {
		style := ""
		if a.or {
			style = " [style=dashed]"
		}
		fmt.Fprintf(&b, "  n%d -> n%d%s;\n", id[a.from], id[a.to], style)
	}
	b.WriteString("}\n")
	return b.String()
}
