package client

import (
	"context"
	"io"
	"sync"
)

// queue is a FIFO of events, so that the goroutines reading the link
// never wait for the one reading the events: a slow reader costs memory,
// never a lost event or a stalled reply. Program output is the exception:
// each piece holds part of its session's output budget until it is read,
// and the session stops reading output while the budget is spent. Readers
// pull, so nothing is left running when no one reads.
type queue struct {
	mu     sync.Mutex
	items  []entry
	pushed int // how many were ever queued
	closed bool
	wake   chan struct{} // closed and replaced when items arrive or the queue closes
}

// entry is a queued event, and for output the budget it holds.
type entry struct {
	ev     Event
	budget *budget
}

func newQueue() *queue { return &queue{wake: make(chan struct{})} }

// push queues e, and says false when the queue had closed.
func (q *queue) push(e Event) bool { return q.put(entry{ev: e}) }

// put queues an entry; one that comes too late gives its budget back.
func (q *queue) put(e entry) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		e.budget.release(len(e.ev.Group.Body))
		return false
	}
	q.items = append(q.items, e)
	q.pushed++
	q.signal()
	return true
}

// count is how many events were ever queued.
func (q *queue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushed
}

// taken is how many events were ever read.
func (q *queue) taken() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushed - len(q.items)
}

// close lets readers take what is queued, then tells them io.EOF.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.signal()
	}
}

// signal wakes the waiting readers. q.mu must be held.
func (q *queue) signal() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// next takes the next event for its reader, giving back the budget it
// held.
func (q *queue) next(ctx context.Context) (Event, error) {
	e, err := q.take(ctx)
	e.budget.release(len(e.ev.Group.Body))
	return e.ev, err
}

// take takes the next entry as it is, budget and all, to move it to
// another queue (Joined).
func (q *queue) take(ctx context.Context) (entry, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			e := q.items[0]
			q.items[0] = entry{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return e, nil
		}
		closed, wake := q.closed, q.wake
		q.mu.Unlock()
		if closed {
			return entry{}, io.EOF
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return entry{}, ctx.Err()
		}
	}
}

// outputBuffer bounds the program output a session holds for its reader.
// Beyond it the session stops reading the output stream: the tree's
// output streams fill, the servers stop reading the programs' terminals,
// and the programs block in their writes, as on a slow terminal. News
// and answers travel apart and never wait for it.
const outputBuffer = 1 << 20

// budget is the output a session holds and its reader has not read.
type budget struct {
	mu    sync.Mutex
	used  int
	freed chan struct{} // closed and replaced when used drops
}

func newBudget() *budget { return &budget{freed: make(chan struct{})} }

// acquire waits until the budget has room, then counts n bytes against
// it: a session holds at most outputBuffer and one piece more. It says
// false when done closes first.
func (b *budget) acquire(n int, done <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used < outputBuffer {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-done:
			return false
		}
	}
}

// release gives n bytes back; a nil budget (news) has nothing to give.
func (b *budget) release(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}
