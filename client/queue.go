package client

import (
	"context"
	"io"
	"sync"
)

// queue is an unbounded FIFO of events, so that the goroutine reading the
// link never waits for the one reading the events: a slow reader costs
// memory, never a lost event or a stalled reply. Readers pull, so nothing
// is left running when no one reads.
type queue struct {
	mu     sync.Mutex
	items  []Event
	closed bool
	wake   chan struct{} // closed and replaced when items arrive or the queue closes
}

func newQueue() *queue { return &queue{wake: make(chan struct{})} }

// push queues e, and says false when the queue had closed.
func (q *queue) push(e Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.items = append(q.items, e)
		q.signal()
	}
	return !q.closed
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

func (q *queue) next(ctx context.Context) (Event, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			e := q.items[0]
			q.items[0] = Event{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return e, nil
		}
		closed, wake := q.closed, q.wake
		q.mu.Unlock()
		if closed {
			return Event{}, io.EOF
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}
