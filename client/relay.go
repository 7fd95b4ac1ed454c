package client

import (
	"context"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Relay drives the session of a job that may be started again (restart):
// each command goes to the job's current session, and when the job is
// started again the relay switches to the new session. The events of
// every session come out of one queue that outlives them: an old
// session's events are all queued before the new one's first, and none
// after it, so that a late word of the old job is never taken for the new
// one's.
type Relay struct {
	events *queue
	done   chan struct{}

	mu        sync.Mutex
	current   *Session
	forwarded chan struct{} // closed when the current session's events have all moved
	vacant    error         // why there is no session to send to, between two
	closed    bool
}

// NewRelay returns a relay to s.
func NewRelay(s *Session) *Relay {
	r := &Relay{events: newQueue(), done: make(chan struct{})}
	r.follow(s)
	return r
}

// follow makes s the current session and moves its events to the queue.
func (r *Relay) follow(s *Session) {
	forwarded := make(chan struct{})
	r.current, r.forwarded, r.vacant = s, forwarded, nil
	go func() {
		defer close(forwarded)
		for {
			ev, err := s.NextEvent(context.Background())
			if err != nil {
				return
			}
			r.events.push(ev)
		}
	}()
}

// Session is the current session.
func (r *Relay) Session() *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// Vacate says that the current session has ended and no other has taken
// its place yet: commands are answered with why until Switch.
func (r *Relay) Vacate(why error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vacant = why
}

// Switch makes s the current session. The one it replaces is closed (its
// owner has usually ended it already), and every event it sent is queued
// before the first of s.
func (r *Relay) Switch(s *Session) {
	r.mu.Lock()
	old, forwarded := r.current, r.forwarded
	r.mu.Unlock()
	old.Close()
	<-forwarded // bounded: a closed session's events end
	r.mu.Lock()
	defer r.mu.Unlock()
	r.follow(s)
}

// Size is the number of ranks of the job.
func (r *Relay) Size() int { return r.Session().Size() }

// NextEvent returns the next event of the job, as Session.NextEvent does;
// io.EOF comes only after Close.
func (r *Relay) NextEvent(ctx context.Context) (Event, error) { return r.events.next(ctx) }

// Done is closed by Close.
func (r *Relay) Done() <-chan struct{} { return r.done }

// Command sends the command to the current session.
func (r *Relay) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	r.mu.Lock()
	s, vacant := r.current, r.vacant
	r.mu.Unlock()
	if vacant != nil {
		return nil, vacant
	}
	return s.Command(ctx, ranks, op, body, timeout)
}

// Close ends the relay; the session is its owner's to end. The events of a
// session that has ended are all queued first, so that its last words are
// still read.
func (r *Relay) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	select {
	case <-r.current.Done():
		<-r.forwarded
	default:
	}
	r.events.close()
	close(r.done)
}
