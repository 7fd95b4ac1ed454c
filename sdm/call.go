package sdm

import (
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// call is a command in flight at this node: it waits for one answer from
// each source (this node's own backend and every child whose subtree the
// command reaches), merging them, and completes when all have answered or
// its deadline passes. Calls are independent, so a slow one holds up no
// other. All fields are guarded by the node's mutex.
type call struct {
	id      uint64
	op      string
	merger  op.Merger            // the op's own: the node knows nothing else of the op
	waiting map[int]wire.RankSet // source (child index, or rankSource) → ranks it answers for
	timer   *time.Timer
	cancel  func() // stops the backend's work on the call once it is settled
	// flushBy bounds how long a quit waits for the output queued before
	// it to go up: a little before the parent gives up on the answer.
	flushBy time.Time
}

// rankSource is the key in call.waiting of the backend of this node's
// own rank r; a child's key is its index, never negative.
func rankSource(r int) int { return -1 - r }

// answer records source's reply groups.
func (c *call) answer(source int, groups []wire.Group) {
	want, ok := c.waiting[source]
	if !ok {
		return // late or duplicate: the source was already accounted for
	}
	delete(c.waiting, source)
	var got wire.Builder
	for _, g := range groups {
		// A confused child cannot answer for ranks it was not asked about.
		r := g.Ranks.Intersect(want)
		got.AddSet(r)
		if !r.Empty() {
			c.merger.Add(r, g.Status, g.Body)
		}
	}
	if missing := want.Minus(got.Set()); !missing.Empty() {
		c.merger.Add(missing, wire.StatusError, []byte("server answered without these ranks"))
	}
}

// fail records the same failure for everything source still owes.
func (c *call) fail(source int, status wire.Status, reason string) {
	if want, ok := c.waiting[source]; ok {
		delete(c.waiting, source)
		c.merger.Add(want, status, []byte(reason))
	}
}

// expire reports every source that has not answered as timed out, naming
// it: this node's debugger, or the server of a child's subtree. The text
// names no duration: each level of the tree has its own deadline, and the
// same news from every level must merge (the front end, which knows the
// deadline it gave, says it).
func (c *call) expire(server func(index int) string) {
	for source, want := range c.waiting {
		reason := "debugger busy or hung"
		if source >= 0 {
			reason = notResponding(server(source))
		}
		c.merger.Add(want, wire.StatusTimeout, []byte(reason))
		delete(c.waiting, source)
	}
}

// notResponding is why a child's subtree did not answer; server names
// the child (child.name).
func notResponding(server string) string { return server + " not responding" }

// reply is the call's merged answer.
func (c *call) reply() *wire.Message {
	return &wire.Message{Kind: wire.KindReply, ID: c.id, Op: c.op, Groups: c.merger.Groups()}
}
