package console

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// queues shows each rank's MPI operations in flight, as the library
// preloaded into the ranks keeps them, merged over ranks: ranks whose
// operations read alike share a line, a peer told as an offset from the
// rank ("to rank+1") where that makes more ranks alike than the peer's
// number does, as in a ring.

// queuesUsage is how queues is typed.
const queuesUsage = "queues"

// pendingLine is one rank's operation in flight.
type pendingLine struct {
	rank    int
	op      wire.MPIOp
	library string // the MPI's message-queue library it was read through
	abs     string // the operation, its peer a rank
	rel     string // the operation, its peer an offset from the rank; abs without one
	// least and most are the waits of the ranks the answer merged.
	least, most time.Duration
}

// QueueGroup is ranks with an operation in flight that reads alike.
type QueueGroup struct {
	Ranks    wire.RankSet
	Text     string
	Op       wire.MPIOp // the lowest rank's
	Relative bool       // Text tells the peer as an offset from each rank
	// Library is the MPI's message-queue library the operation was read
	// through (wire.Queues.Library), which knows no waits.
	Library string
	// Least and Most are how long the group's ranks have waited.
	Least, Most time.Duration
}

// GroupQueues merges the ranks' queues: one group per operation that
// reads alike, the longest waits first; idle are the ranks with none.
func GroupQueues(queues map[int]wire.Queues) (groups []QueueGroup, idle wire.RankSet) {
	var lines []pendingLine
	var b wire.Builder
	for rank, q := range queues {
		if len(q.Ops) == 0 {
			b.Add(rank)
		}
		for _, o := range q.Ops {
			abs, rel := pendingText(o, rank, q.Size)
			lines = append(lines, pendingLine{rank: rank, op: o, library: q.Library, abs: abs, rel: rel, least: o.Least, most: o.Waiting})
		}
	}
	// A line reads alike by its text and where the program made the call:
	// calls from different places are apart.
	type key struct{ text, at string }
	count := map[key]int{}
	for _, l := range lines {
		at := PlaceText(l.op.At) + l.library
		count[key{l.abs, at}]++
		if l.rel != l.abs {
			count[key{l.rel, at}]++
		}
	}
	byKey := map[key]*QueueGroup{}
	var order []key
	slices.SortFunc(lines, func(a, b pendingLine) int { return a.rank - b.rank })
	for _, l := range lines {
		at := PlaceText(l.op.At) + l.library
		k, relative := key{l.abs, at}, false
		if rel := (key{l.rel, at}); count[rel] > count[k] {
			k, relative = rel, true
		}
		g := byKey[k]
		if g == nil {
			g = &QueueGroup{Text: k.text, Op: l.op, Relative: relative, Library: l.library, Least: l.least, Most: l.most}
			byKey[k] = g
			order = append(order, k)
		}
		g.Ranks = g.Ranks.Union(wire.Single(l.rank))
		g.Least, g.Most = min(g.Least, l.least), max(g.Most, l.most)
	}
	for _, k := range order {
		groups = append(groups, *byKey[k])
	}
	slices.SortStableFunc(groups, func(a, b QueueGroup) int { return int(b.Most - a.Most) })
	return groups, b.Set()
}

// pendingText says an operation, its peer as a rank (abs) and as an
// offset from rank in a world of size (rel; abs when it has no peer).
func pendingText(o wire.MPIOp, rank, size int) (abs, rel string) {
	dir := "to"
	if receives(o) || o.Call == wire.Unexpected {
		dir = "from"
	}
	var tail []string
	if o.Tag != 0 || o.Peer >= 0 || o.Peer == wire.AnySource {
		tail = append(tail, "tag "+tagText(o.Tag))
	}
	if o.Root >= 0 {
		tail = append(tail, fmt.Sprintf("root %d", o.Root))
	}
	switch {
	case strings.HasPrefix(o.Call, "MPI_Wait"):
		tail = append(tail, fmt.Sprintf("on %d %s", o.Count, plural(o.Count, "request", "requests")))
	case o.Comm == commUnknown:
		tail = append(tail, "on a communicator sdm cannot tell")
	case o.Comm == 0 && o.CommSize > 0:
		tail = append(tail, "MPI_COMM_WORLD")
	case o.CommSize > 0:
		tail = append(tail, fmt.Sprintf("communicator %d of %d ranks", o.Comm, o.CommSize))
	}
	if o.Bytes > 0 {
		tail = append(tail, fmt.Sprintf("%d bytes", o.Bytes))
	}
	if o.Request && o.Call != wire.PostedSend && o.Call != wire.PostedRecv {
		tail = append(tail, "posted")
	}
	rest := ""
	if len(tail) > 0 {
		rest = ", " + strings.Join(tail, ", ")
	}
	switch o.Peer {
	case wire.NoRank:
		return o.Call + rest, o.Call + rest
	case wire.AnySource:
		return o.Call + " from any rank" + rest, o.Call + " from any rank" + rest
	case wire.ProcNull:
		return o.Call + " " + dir + " MPI_PROC_NULL" + rest, o.Call + " " + dir + " MPI_PROC_NULL" + rest
	case wire.UnknownRank:
		return o.Call + " " + dir + " a rank sdm could not map" + rest, o.Call + " " + dir + " a rank sdm could not map" + rest
	}
	abs = fmt.Sprintf("%s %s %d%s", o.Call, dir, o.Peer, rest)
	off := o.Peer - rank
	if size > 0 {
		// The nearest way round the world, as a ring's code writes it.
		off = ((off % size) + size) % size
		if off > size/2 {
			off -= size
		}
	}
	return abs, fmt.Sprintf("%s %s rank%+d%s", o.Call, dir, off, rest)
}

// PlaceText says where the program made a call: "in ring at ring.c:42",
// or "" where unknown.
func PlaceText(f wire.Frame) string {
	switch {
	case f.Func == "":
		return ""
	case f.File != "":
		return fmt.Sprintf("in %s at %s:%d", f.Func, f.File, f.Line)
	case f.From != "":
		return fmt.Sprintf("in %s from %s", f.Func, f.From)
	}
	return "in " + f.Func
}

// mergedText says an operation of an answer that may merge ranks,
// rank the lowest: its peer as a rank where all have the same, as an
// offset where all have the same offset.
func mergedText(o wire.MPIOp, rank, size int) string {
	abs, rel := pendingText(o, rank, size)
	switch {
	case len(o.Peers) == 0 || len(o.Peers) == 1 && (o.Peers[0].Count == 1 || o.Peers[0].Step == 0):
		return abs
	case len(o.Peers) == 1 && o.Peers[0].Step == 1:
		return rel
	}
	return fmt.Sprintf("%s (rank %d's; the others' peers differ)", abs, rank)
}

func tagText(tag int) string {
	if tag == wire.AnyTag {
		return "any"
	}
	return fmt.Sprint(tag)
}

// waitText is how long a group's ranks have waited.
func waitText(least, most time.Duration) string {
	r := func(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }
	if r(least) == r(most) {
		return "waiting " + r(most) + " s"
	}
	return "waiting " + r(least) + "-" + r(most) + " s"
}

func runQueues(ctx context.Context, c *Console, ranks wire.RankSet, args string) error {
	if strings.TrimSpace(args) != "" {
		return usageError("%s", queuesUsage)
	}
	groups, err := c.s.Command(ctx, ranks, wire.OpQueues, nil, c.opts.Timeout)
	if err != nil {
		return err
	}
	queues, _, failed := DecodeQueues(groups)
	merged, idle := GroupQueues(queues)
	if c.opts.JSON {
		for _, g := range merged {
			o := g.Op
			c.emit(map[string]any{"ranks": g.Ranks.String(), "count": g.Ranks.Count(), "op": "queues", "status": "ok", "value": map[string]any{
				"text": g.Text, "call": o.Call, "peer": o.Peer, "relative": g.Relative, "tag": o.Tag, "comm": o.Comm,
				"comm_size": o.CommSize, "count": o.Count, "bytes": o.Bytes, "root": o.Root, "posted": o.Request,
				"waiting_least": g.Least.Seconds(), "waiting_most": g.Most.Seconds(), "at": PlaceText(o.At), "library": g.Library}})
		}
		if !idle.Empty() {
			c.emit(map[string]any{"ranks": idle.String(), "count": idle.Count(), "op": "queues", "status": "ok", "value": nil})
		}
	} else {
		for _, g := range merged {
			line := fmt.Sprintf("[%v] %s: %s", g.Ranks, g.Text, waitText(g.Least, g.Most))
			if g.Library != "" {
				line = fmt.Sprintf("[%v] %s (queued in the MPI, read through %s)", g.Ranks, g.Text, g.Library)
			}
			if at := PlaceText(g.Op.At); at != "" {
				line += ", " + at
			}
			c.println(line)
		}
		if !idle.Empty() {
			c.println(fmt.Sprintf("[%v] no MPI operation in flight", idle))
		}
	}
	failed, gones := c.goneOf(ctx, wire.OpQueues, failed)
	for _, g := range failed {
		c.printReply(wire.OpQueues, "", g)
	}
	c.printGone(wire.OpQueues, gones)
	return nil
}
