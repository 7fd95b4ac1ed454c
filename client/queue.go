package client

import (
	"context"
	"sync"

	"github.com/sdm-hpc/sdm/internal/fifo"
)

// queue is a FIFO of events, so that the goroutines reading the link
// never wait for the one reading the events: a slow reader costs memory,
// never a lost event or a stalled reply. Program output is the exception:
// each piece holds part of its session's output budget until it is read,
// and the session stops reading output while the budget is spent. Readers
// pull, so nothing is left running when no one reads.
type queue struct{ q *fifo.Queue[entry] }

// entry is a queued event, and for output the budget it holds.
type entry struct {
	ev     Event
	budget *budget
}

func newQueue() *queue { return &queue{q: fifo.New[entry]()} }

// push queues e, and says false when the queue had closed.
func (q *queue) push(e Event) bool { return q.put(entry{ev: e}) }

// put queues an entry; one that comes too late gives its budget back.
func (q *queue) put(e entry) bool {
	if !q.q.Push(e) {
		e.budget.release(len(e.ev.Group.Body))
		return false
	}
	return true
}

// count is how many events were ever queued.
func (q *queue) count() int { return q.q.Pushed() }

// taken is how many events were ever read.
func (q *queue) taken() int { return q.q.Popped() }

// close lets readers take what is queued, then tells them io.EOF.
func (q *queue) close() { q.q.Close() }

// next takes the next event for its reader, giving back the budget it
// held.
func (q *queue) next(ctx context.Context) (Event, error) {
	e, err := q.take(ctx)
	e.budget.release(len(e.ev.Group.Body))
	return e.ev, err
}

// take takes the next entry as it is, budget and all, to move it to
// another queue (Joined); io.EOF once the queue is closed and empty.
func (q *queue) take(ctx context.Context) (entry, error) { return q.q.Pop(ctx) }

// outputBuffer bounds the program output a session holds for its reader.
// Beyond it the session stops reading the output stream: the tree's
// output streams fill, the servers stop reading the programs' terminals,
// and the programs block in their writes, as on a slow terminal. News
// and answers travel apart and never wait for it.
const outputBuffer = 1 << 20

// budget is the output a session holds and its reader has not read.
type budget struct {
	mu      sync.Mutex
	used    int
	waiting int           // readers waiting for room
	freed   chan struct{} // closed and replaced when used drops
	stalled chan struct{} // closed and replaced when a reader starts waiting
}

func newBudget() *budget {
	return &budget{freed: make(chan struct{}), stalled: make(chan struct{})}
}

// stuck says whether a reader waits for room, and returns a channel
// closed when one starts to.
func (b *budget) stuck() (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting > 0, b.stalled
}

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
		b.waiting++
		close(b.stalled)
		b.stalled = make(chan struct{})
		b.mu.Unlock()
		select {
		case <-freed:
		case <-done:
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		select {
		case <-done:
			return false
		default:
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
