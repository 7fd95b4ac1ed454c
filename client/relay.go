package client

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Relay drives the session of a job that may be started again (restart):
// each command goes to the job's current session, and when the job is
// started again the relay switches to the new session. Events are read
// from the sessions themselves, the replaced ones first: an old session's
// events all come before the new one's first, and none after it, so that
// a late word of the old job is never taken for the new one's. Nothing
// moves events between queues, so that once a command's answer is back,
// the events that came before it can be read, as from a session.
type Relay struct {
	done chan struct{}

	mu      sync.Mutex
	current *Session
	// reading holds the sessions whose events are still to be read,
	// oldest first: the current one, after those it replaced.
	reading []*Session
	changed chan struct{} // closed and replaced at Switch and Close
	vacant  error         // why there is no session to send to, between two
	closed  bool
}

// NewRelay returns a relay to s.
func NewRelay(s *Session) *Relay {
	return &Relay{done: make(chan struct{}), current: s, reading: []*Session{s}, changed: make(chan struct{})}
}

// signal wakes a reader waiting for a new session or the end. r.mu is held.
func (r *Relay) signal() {
	close(r.changed)
	r.changed = make(chan struct{})
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
// owner has usually ended it already), and every event it sent is read
// before the first of s.
func (r *Relay) Switch(s *Session) {
	r.mu.Lock()
	old := r.current
	r.mu.Unlock()
	old.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current, r.vacant = s, nil
	r.reading = append(r.reading, s)
	r.signal()
}

// Size is the number of ranks of the job.
func (r *Relay) Size() int { return r.Session().Size() }

// NextEvent returns the next event of the job, as Session.NextEvent does;
// io.EOF comes only after Close, once the events of sessions that had
// ended are read.
func (r *Relay) NextEvent(ctx context.Context) (Event, error) {
	for {
		r.mu.Lock()
		s, later, closed, changed := r.reading[0], len(r.reading) > 1, r.closed, r.changed
		r.mu.Unlock()
		read := ctx
		if closed {
			// What is queued already, and no more.
			var cancel context.CancelFunc
			read, cancel = context.WithCancel(ctx)
			cancel()
		}
		ev, err := r.read(read, s, changed)
		switch {
		case err == nil:
			return ev, nil
		case ctx.Err() != nil:
			return Event{}, ctx.Err()
		case errors.Is(err, errChanged):
			continue
		case later:
			r.mu.Lock()
			if len(r.reading) > 1 && r.reading[0] == s {
				r.reading = r.reading[1:]
			}
			r.mu.Unlock()
			continue
		case closed:
			return Event{}, io.EOF
		}
		// The current session has ended: wait for the next, or the end.
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// errChanged ends a read that a Switch or Close overtook.
var errChanged = errors.New("relay changed")

// read is s.NextEvent(ctx), which a Switch or Close (changed) also ends,
// with errChanged, when s has nothing queued.
func (r *Relay) read(ctx context.Context, s *Session, changed <-chan struct{}) (Event, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-changed:
			cancel(errChanged)
		case <-ctx.Done():
		}
	}()
	ev, err := s.NextEvent(ctx)
	if err != nil && errors.Is(context.Cause(ctx), errChanged) {
		return Event{}, errChanged
	}
	return ev, err
}

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

// Close ends the relay; the session is its owner's to end. The events
// queued by then are still read, then io.EOF.
func (r *Relay) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	r.signal()
	close(r.done)
}
