package sdm

import (
	"context"
	"fmt"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// margin is how much earlier than its parent a child gives up on a
// command, so that the child's "timed out" answer, naming exactly the
// ranks that did not answer, reaches the parent before the parent's own
// deadline would write off the whole subtree.
func margin(timeout time.Duration) time.Duration {
	return min(timeout/10, 250*time.Millisecond)
}

// command starts m: it registers a call, posts m to the children whose
// subtrees it reaches, in arrival order, and hands it to the backend. It
// never waits for a child: a child that is gone is answered for at once
// (lost), one that has not been heard from lately after quietGrace (not
// responding, unless it is back and answers), and the others get m
// through their outboxes.
func (n *Node) command(ctx context.Context, m *wire.Message) {
	if n.cfg.Trace != nil { // boxing the arguments would allocate at every command
		n.cfg.Trace.Printf("command %d %s to [%v], %v", m.ID, m.Op, m.Ranks, m.Timeout)
	}
	cl := &call{id: m.ID, op: m.Op, merger: op.NewMerger(m.Op), cancel: func() {}, waiting: make(map[int]wire.RankSet),
		flushBy: time.Now().Add(m.Timeout - margin(m.Timeout))}
	n.mu.Lock()
	if _, dup := n.calls[m.ID]; dup {
		n.mu.Unlock()
		n.log.Printf("refused command %d (%s): a command with that id is still running", m.ID, m.Op)
		cl.merger.Add(m.Ranks, wire.StatusError, []byte(fmt.Sprintf("command id %d is already in use", m.ID)))
		n.reply(cl)
		return
	}
	if m.Op == wire.OpQuit {
		n.quitting = true
	}
	if outside := m.Ranks.Minus(n.reach); !outside.Empty() {
		cl.merger.Add(outside, wire.StatusNoRank, fmt.Appendf(nil, "no such rank: the job has ranks 0-%d", n.size-1))
	}
	own := m.Ranks.Intersect(n.self)
	own.Each(func(r int) bool {
		cl.waiting[rankSource(r)] = wire.Single(r)
		return true
	})
	timeout := m.Timeout - margin(m.Timeout)
	deadline := time.Now().Add(timeout)
	var quiet []*child
	for _, c := range n.children {
		r := m.Ranks.Intersect(c.ranks)
		switch {
		case r.Empty():
		case c.link == nil:
			cl.merger.Add(r, wire.StatusLost, []byte(c.lost))
		default:
			if c.quiet {
				quiet = append(quiet, c)
			}
			cl.waiting[c.index] = r
			c.out.post(&wire.Message{Kind: wire.KindCommand, ID: m.ID, Op: m.Op, Ranks: r, Timeout: timeout, Body: m.Body}, deadline)
		}
	}
	if len(cl.waiting) == 0 {
		n.mu.Unlock()
		n.complete(cl)
		return
	}
	// The backend's work ends when the call is settled, by its answer or
	// by the deadline, so a late answer never races the timeout.
	bctx, cancel := context.WithCancel(ctx)
	cl.cancel = cancel
	n.calls[cl.id] = cl
	cl.timer = time.AfterFunc(m.Timeout, func() { n.settle(cl, func(cl *call) { cl.expire(n.serverName) }) })
	if len(quiet) > 0 {
		n.quietFor(cl, quiet, min(quietGrace, timeout))
	}
	n.mu.Unlock()

	own.Each(func(r int) bool {
		n.doOwn(bctx, cl, m, r)
		return true
	})
}

// quietGrace is how long a command waits for a child found not
// responding: one that is back answers within it, as soon as it is back,
// where answering for it at once would tell a stale "not responding"
// until the next look at the children; one still silent holds the
// command up no longer.
const quietGrace = 500 * time.Millisecond

// quietFor answers for the quiet children's ranks in cl as not
// responding unless they answered within grace; n.mu is held.
func (n *Node) quietFor(cl *call, quiet []*child, grace time.Duration) {
	why := make(map[int]string, len(quiet))
	for _, c := range quiet {
		why[c.index] = notResponding(c.name())
	}
	time.AfterFunc(grace, func() {
		n.settle(cl, func(cl *call) {
			for index, reason := range why {
				cl.fail(index, wire.StatusTimeout, reason)
			}
		})
	})
}

// doOwn hands m to the backend of rank r, one of this node's own.
func (n *Node) doOwn(ctx context.Context, cl *call, m *wire.Message, r int) {
	source, rank := rankSource(r), wire.Single(r)
	if m.Op == wire.OpQuit {
		n.settle(cl, func(cl *call) { cl.answer(source, []wire.Group{{Ranks: rank}}) })
		return
	}
	s, absent := n.rank(r)
	if s == nil {
		n.settle(cl, func(cl *call) {
			cl.answer(source, []wire.Group{{Ranks: rank, Status: wire.StatusLost, Body: []byte(absent)}})
		})
		return
	}
	s.be.Do(ctx, m.Op, m.Body, func(body []byte, err error) {
		g := wire.Group{Ranks: rank, Body: body}
		if err != nil {
			g.Status, g.Body = wire.StatusError, []byte(err.Error())
		}
		settle := func() { n.settle(cl, func(cl *call) { cl.answer(source, []wire.Group{g}) }) }
		// Settled by pumpBackend, after the events sent before it; at
		// once when it has stopped (a member's rank, lost meanwhile).
		select {
		case n.answered[r] <- settle:
		case <-s.pumped:
			settle()
		case <-n.stopped:
		}
	})
}

// settle applies update to cl if cl is still running, and completes it
// when nothing is owed any more.
func (n *Node) settle(cl *call, update func(*call)) {
	n.mu.Lock()
	if n.calls[cl.id] != cl {
		n.mu.Unlock()
		return
	}
	update(cl)
	if len(cl.waiting) > 0 {
		n.mu.Unlock()
		return
	}
	delete(n.calls, cl.id)
	cl.timer.Stop()
	cl.cancel()
	n.mu.Unlock()
	n.complete(cl)
}

// complete sends cl's answer up. After quit's, the master hangs up on the
// front end, which tells it everything has been sent, whether its
// children answered or were lost already. The servers stay until their
// parents hang up, top down: none exits before every rank has answered
// (a launcher such as mpiexec may tear a job down as soon as one of its
// processes ends).
func (n *Node) complete(cl *call) {
	n.reply(cl)
	if cl.op == wire.OpQuit && n.self.Empty() {
		if up := n.parentLink(); up != nil {
			up.Close()
		}
	}
}

// reply sends cl's answer up. Events held for merging go first, so that
// an answer never overtakes news from before it: the front end that has
// the answer to status has every stop that status reports, and the loss
// of a subtree before the answer that says those ranks are lost. Output
// does not hold answers up, except quit's: the session ends with it, and
// what the ranks wrote before should reach the front end first. The end
// of the output stream (wire.EventOutputEnd) then tells the parent that
// nothing more of it is on its way.
func (n *Node) reply(cl *call) {
	n.events.flush()
	if cl.op == wire.OpQuit {
		if !n.output.flush(cl.flushBy) {
			n.log.Printf("output still queued when the session ended at %v was dropped: the front end did not take it", cl.flushBy.Format(time.TimeOnly))
		}
		n.sendUp(&wire.Message{Kind: wire.KindEvent, Op: wire.EventOutputEnd}, (*wire.Link).SendOutput)
	}
	n.sendUp(cl.reply(), (*wire.Link).Send)
	if n.cfg.AfterAnswer != nil {
		n.cfg.AfterAnswer()
	}
}
