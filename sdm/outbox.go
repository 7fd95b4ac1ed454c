package sdm

import (
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// outbox holds the commands on their way down one child's link. The node
// never writes to a child's link itself: a write blocks when the child
// does not read (it is stopped, or its host is gone), and a node that
// wrote itself would hold every later command, to every child, behind
// it. Each link's own writer sends what its outbox holds, in order, and
// skips a command whose deadline passed before it could go: the node has
// answered for it already, and a child that wakes up must not run it.
type outbox struct {
	link *wire.Link

	mu    sync.Mutex
	queue []posted
	ready chan struct{} // signalled when queue grows
}

type posted struct {
	m        *wire.Message
	deadline time.Time
}

func newOutbox(link *wire.Link) *outbox {
	return &outbox{link: link, ready: make(chan struct{}, 1)}
}

// post queues m, to be sent before deadline or not at all. It never blocks.
func (o *outbox) post(m *wire.Message, deadline time.Time) {
	o.mu.Lock()
	now := time.Now()
	// What nobody waits for any more goes now rather than when the
	// writer gets to it: a child that never reads cannot make the queue
	// grow without end.
	live := o.queue[:0]
	for _, p := range o.queue {
		if now.Before(p.deadline) {
			live = append(live, p)
		}
	}
	o.queue = append(live, posted{m, deadline})
	o.mu.Unlock()
	select {
	case o.ready <- struct{}{}:
	default:
	}
}

// run sends what is posted until the link is gone, or a write fails: it
// then reports the error.
func (o *outbox) run(failed func(error)) {
	for {
		select {
		case <-o.ready:
		case <-o.link.Done():
			return
		}
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		o.mu.Unlock()
		for _, p := range batch {
			if time.Now().After(p.deadline) {
				continue
			}
			if err := o.link.Send(p.m); err != nil {
				failed(err)
				return
			}
		}
	}
}
