package sdm

import (
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// outputLimit bounds the output a node queues for its parent. A child
// whose output would pass it is not read until the queue has gone up, so
// a parent that reads slowly slows the children, and they their
// programs, instead of filling anyone's memory.
const outputLimit = 256 << 10

// maxOutputMessage bounds the output bodies of one message; a longer queue
// goes up in several.
const maxOutputMessage = 1 << 20

// outputStream sends the ranks' output up the parent link's output stream.
// It queues what comes in, merging the lines of several ranks as the
// event batcher does (by the fold of output in the op table: identical
// lines), and one writer sends the queue up whenever the stream takes
// more: under a flood each write carries whatever gathered during the
// one before. The queue is bounded for children (outputLimit);
// the node's own backend bounds its output itself (backend.Event.Sent),
// so that handing it over never blocks the goroutine that also carries
// the rank's stops and answers. Marks (wire.EventOutputMark) queue in
// order with the output and never wait.
type outputStream struct {
	window time.Duration // how long the first of a batch waits for more to merge with
	reach  wire.RankSet
	send   func(*wire.Message) // writes up; blocks while the stream is full
	done   <-chan struct{}     // the node stops

	mu      sync.Mutex
	runs    []outputRun   // what waits to go up, in order
	size    int           // body bytes of runs
	covered wire.RankSet  // ranks of runs
	since   time.Time     // when the oldest of runs came
	marked  bool          // runs hold a mark: a stop waits for it at the front end
	sent    []func()      // the backend's Sent of what is queued
	queued  uint64        // pieces ever queued
	written uint64        // pieces ever written
	wake    chan struct{} // signalled when something is queued
	moved   chan struct{} // closed and replaced when the writer takes or writes
}

// outputRun is a stretch of the queue with one event, which goes up as
// one message.
type outputRun struct {
	event  string
	fold   op.Fold // the event's
	groups []wire.Group
	size   int
}

func newOutputStream(window time.Duration, reach wire.RankSet, send func(*wire.Message), done <-chan struct{}) *outputStream {
	return &outputStream{window: window, reach: reach, send: send, done: done,
		wake: make(chan struct{}, 1), moved: make(chan struct{})}
}

// add queues a piece of output. With wait it first waits, while the
// queue is full, until the writer has taken it (or the node stops).
// sent, when not nil, is called once the piece has been written up.
func (s *outputStream) add(g wire.Group, sent func(), wait bool) {
	s.mu.Lock()
	for wait && s.size >= outputLimit {
		moved := s.moved
		s.mu.Unlock()
		select {
		case <-moved:
		case <-s.done:
			return
		}
		s.mu.Lock()
	}
	s.queue(wire.EventOutput, g)
	if sent != nil {
		s.sent = append(s.sent, sent)
	}
	s.mu.Unlock()
}

// mark queues a mark for ranks after the output queued so far.
func (s *outputStream) mark(ranks wire.RankSet) {
	s.mu.Lock()
	s.queue(wire.EventOutputMark, wire.Group{Ranks: ranks})
	s.marked = true
	s.mu.Unlock()
}

// queue appends g to the last run if it has the same event, else starts
// a new run. s.mu is held.
func (s *outputStream) queue(event string, g wire.Group) {
	if len(s.runs) == 0 {
		s.since = time.Now()
	}
	if n := len(s.runs); n == 0 || s.runs[n-1].event != event || s.runs[n-1].size >= maxOutputMessage {
		s.runs = append(s.runs, outputRun{event: event, fold: op.EventFold(event)})
	}
	r := &s.runs[len(s.runs)-1]
	r.groups = appendEvent(r.groups, g, r.fold)
	r.size += len(g.Body)
	s.size += len(g.Body)
	s.covered = s.covered.Union(g.Ranks)
	s.queued++
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run writes the queue up until the node stops.
func (s *outputStream) run() {
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		if !s.gather() {
			return
		}
		s.mu.Lock()
		runs, sent, upTo := s.runs, s.sent, s.queued
		s.runs, s.sent, s.size, s.covered, s.marked = nil, nil, 0, wire.RankSet{}, false
		s.signal()
		s.mu.Unlock()
		for _, r := range runs {
			s.send(&wire.Message{Kind: wire.KindEvent, Op: r.event, Groups: r.groups})
		}
		for _, f := range sent {
			f()
		}
		s.mu.Lock()
		s.written = upTo
		s.signal()
		s.mu.Unlock()
	}
}

// gather waits out the merge window of the oldest queued piece, unless
// the queue already covers every rank below the node (nothing more could
// merge into it), is full, or holds a mark, which a stop waits for at the
// front end. It says false when the node stops.
func (s *outputStream) gather() bool {
	if s.window <= 0 {
		return true
	}
	for {
		s.mu.Lock()
		left := s.window - time.Since(s.since)
		ready := len(s.runs) == 0 || left <= 0 || s.marked || s.size >= outputLimit || s.reach.Minus(s.covered).Empty()
		s.mu.Unlock()
		if ready {
			return true
		}
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-s.wake:
			t.Stop()
		case <-s.done:
			t.Stop()
			return false
		}
	}
}

// signal wakes whoever waits for the writer. s.mu is held.
func (s *outputStream) signal() {
	close(s.moved)
	s.moved = make(chan struct{})
}

// flush waits until everything queued before it has been written up, or
// until the deadline; it says whether it got there.
func (s *outputStream) flush(deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	s.mu.Lock()
	want := s.queued
	for s.written < want {
		moved := s.moved
		s.mu.Unlock()
		select {
		case <-moved:
		case <-t.C:
			return false
		case <-s.done:
			return false
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return true
}

// forwardOutput passes a child's output and marks up, as forwardEvents
// does its events. While the output queue is full it waits, and so stops
// reading the child's output stream.
func (n *Node) forwardOutput(c *child, m *wire.Message) {
	for _, g := range m.Groups {
		g.Ranks = g.Ranks.Intersect(c.ranks)
		switch {
		case g.Ranks.Empty():
		case m.Op == wire.EventOutput:
			n.output.add(g, nil, true)
		case m.Op == wire.EventOutputMark:
			n.output.mark(g.Ranks)
		}
	}
}
