// Package fifo is an unbounded first-in first-out queue between
// goroutines: values go in with Push, which never blocks, and come out
// with Pop, which waits for one. It is for a producer that must not wait
// for its consumer (a reader of a link or of gdb's output, a node handing
// commands over): a slow consumer costs memory, never a stalled producer.
// Stdlib only.
package fifo

import (
	"context"
	"io"
	"sync"
)

// Queue is an unbounded FIFO of T; its zero value is not ready, New makes
// one. Any number of goroutines may push and pop.
type Queue[T any] struct {
	mu     sync.Mutex
	items  []T
	pushed int // values ever pushed
	closed bool
	// wake is closed and replaced when values arrive or the queue closes,
	// once a reader has taken it to wait on (armed): a queue whose reader
	// keeps up allocates nothing per value.
	wake  chan struct{}
	armed bool
}

// New returns an empty, open queue.
func New[T any]() *Queue[T] { return &Queue[T]{wake: make(chan struct{})} }

// Push appends v; false when the queue was closed, and v is not queued.
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, v)
	q.pushed++
	q.signal()
	return true
}

// Pop takes the oldest value, waiting for one. Once the queue is closed
// and empty it returns io.EOF, and ctx's error when ctx ends first.
func (q *Queue[T]) Pop(ctx context.Context) (T, error) {
	var zero T
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			v := q.items[0]
			q.items[0] = zero // the queue no longer holds on to it
			q.items = q.items[1:]
			if len(q.items) == 0 {
				q.items = nil // start afresh rather than keep a burst's array
			}
			q.mu.Unlock()
			return v, nil
		}
		if q.closed {
			q.mu.Unlock()
			return zero, io.EOF
		}
		wake := q.wake
		q.armed = true
		q.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// Close refuses further values; readers still take those queued, then
// io.EOF. Closing twice does nothing.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.signal()
	}
}

// Abandon closes the queue and takes every value still queued, for the
// caller to answer or release: readers see io.EOF at once.
func (q *Queue[T]) Abandon() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	left := q.items
	q.items = nil
	if !q.closed {
		q.closed = true
		q.signal()
	}
	return left
}

// Pushed is how many values were ever pushed.
func (q *Queue[T]) Pushed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushed
}

// Popped is how many values were ever taken (by Pop or Abandon).
func (q *Queue[T]) Popped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushed - len(q.items)
}

// signal wakes the waiting readers; q.mu is held.
func (q *Queue[T]) signal() {
	if q.armed {
		close(q.wake)
		q.wake = make(chan struct{})
		q.armed = false
	}
}
