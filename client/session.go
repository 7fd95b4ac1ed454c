// Package client is the front end's side of the tree: it binds the session
// port, lets the master in once it proves it holds the session key, sends
// commands to rank sets and hands back merged replies and events. It also
// answers the library loads that ranks report and wait on (loads.go), so
// that every front end does. The console and every other front end talk to
// the tree only through it.
//
// What enters: the master's link to the session port, and the messages on
// it (replies, events, output). What leaves: commands (op, body, rank set,
// deadline) down that link, their merged groups to the caller, and the
// tree's news as Events from NextEvent, in the order the ranks made it.
//
// # Membership
//
// Tree membership arrives as connected and lost events; the session keeps
// the sets, and WaitConnected returns when all N ranks have joined (naming
// the missing ones at its deadline).
//
// # Output and the order of news
//
// Output comes on a stream of its own, events and answers on the control
// stream, so the two can arrive out of order. What keeps their order is a
// mark (wire.EventOutputMark): a stop or exit of a rank puts one in the
// output stream after the output the rank wrote before it, and the session
// holds the stop (and that rank's later news) until the marks of all its
// ranks have arrived. So a rank's output still prints before its stop
// however far the output lags, while a halt reaches a flooding rank at
// once. A rank whose server is lost sends no more marks, so its news is
// let go. An answer waits for the held news of its ranks while the output
// stream moves (a stop's mark is on its way whenever the stop is), and
// goes first only once the front end stops reading output because 1 MiB of
// it is unread (the mark is stuck behind it), or after 5 s.
//
// At most 1 MiB of output not yet taken by NextEvent is held; beyond that
// the session stops reading the master's output stream, and the tree's
// bounds do the rest. The session reads the output stream to its end after
// the master hangs up.
//
// Output of ranks that came another way (a launched MPIR starter's
// labelled lines) enters through AddOutput, which queues a line among the
// tree's events as that rank's output, so that it prints and merges as
// output that came through the tree does. It counts against the same
// 1 MiB, and waits while that is spent, so a slow console slows the
// starter's reading, and the ranks' writes, as for the tree's output.
//
// # Library loads
//
// A Session answers every library-loaded group it receives with plant to
// that group's ranks (one round trip, counted by LoadRoundTrips); the
// rank's gdb reads the new symbols, which plants the pending breakpoints,
// and the rank goes on. A rank that fails to answer is reported as an
// error event, since it may be left held. Events batch at each node for
// the event window, so ranks that load the same library together cost one
// round trip between them. Package dlopen says which loads are reported.
//
// # Several sessions as one
//
// Relay drives the sessions of a job started again as one (the console's
// restart): it sends each command to the current session and passes its
// events into one queue that outlives it. On a switch, the old session is
// closed and its events all queued before the new one's first; none of the
// old one's can follow, so a late word of the old job (an exit, a loss) is
// never taken for the new one's. Between the end and the switch, commands
// are answered with why there is no job. The console's event printer and
// its waits never notice the switch.
//
// Joined drives several jobs' sessions as one (sdm listen's jobs): the
// jobs' ranks follow one another (the first job's from 0, the next from
// where it ends), a command is split by job and sent to each at once with
// its ranks shifted, and the answers are shifted back and merged as the
// tree merges them, so that ranks of two jobs stopped at the same line
// print as one line.
package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// ErrClosed is returned for commands on a session that has ended.
var ErrClosed = errors.New("session closed")

// Session is a live connection to the master of a tree.
type Session struct {
	link   *wire.Link
	size   int
	nextID atomic.Uint64
	events *queue
	order  *order  // holds stops back until the output before them is in
	output *budget // the program output queued and not read yet
	// loadTrips counts the answers to reported loads (loads.go).
	loadTrips atomic.Int64

	mu        sync.Mutex
	pending   map[uint64]chan *wire.Message
	connected wire.RankSet
	lost      wire.RankSet
	changed   chan struct{} // closed and replaced whenever connected or lost change
	err       error
	ended     chan struct{} // closed when the control stream has ended: no more answers
	closing   chan struct{} // closed by Close: nobody waits for the rest of the output
	closeOnce sync.Once
	done      chan struct{} // closed when both streams have ended and everything is queued
}

// Event is news from the tree: Op (a wire.Event* name) and who said what.
type Event struct {
	Op    string
	Group wire.Group
}

func newSession(link *wire.Link, hello wire.Hello) *Session {
	s := &Session{
		link:    link,
		size:    hello.Size,
		events:  newQueue(),
		order:   newOrder(hello.Size),
		output:  newBudget(),
		pending: make(map[uint64]chan *wire.Message),
		changed: make(chan struct{}),
		ended:   make(chan struct{}),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		s.readControl()
	}()
	go func() {
		defer readers.Done()
		s.readOutput()
	}()
	go func() {
		readers.Wait()
		s.finish()
	}()
	return s
}

// Size is the number of ranks in the job.
func (s *Session) Size() int { return s.size }

// NextEvent returns the next event, in the order the tree sent them,
// except that a rank's stop or exit comes after the output the rank wrote
// before it, which travels apart and may arrive later. Nothing is dropped:
// events wait for a slow reader, and program output waits in the tree,
// which holds only a bounded amount of it. Once the session has ended and
// every event was taken, it returns io.EOF; when ctx ends first, ctx's
// error.
func (s *Session) NextEvent(ctx context.Context) (Event, error) { return s.events.next(ctx) }

// AddOutput delivers, among the tree's events, output of ranks that
// reached the front end by another way: a starter that passes on its
// ranks' output, for a job acquired through MPIR. It then prints and
// merges as output that came through the tree does, and waits while the
// session holds as much output as it takes. It says false when the
// session has ended.
func (s *Session) AddOutput(ranks wire.RankSet, o wire.Output) bool {
	ev := Event{Op: wire.EventOutput, Group: wire.Group{Ranks: ranks, Body: wire.MustEncode(o)}}
	if !s.output.acquire(len(ev.Group.Body), s.done) {
		return false
	}
	return s.events.put(entry{ev: ev, budget: s.output})
}

// Done is closed when the session has ended and everything it received
// is queued; Err says why.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is why the session ended (nil while it runs).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Command sends op with body to ranks and waits for the merged answers,
// one group per distinct answer, ordered by lowest rank. Ranks that did not
// answer within timeout come back as a group with wire.StatusTimeout, ranks
// whose servers are gone with wire.StatusLost.
func (s *Session) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	if ranks.Empty() {
		return nil, errors.New("no ranks to send to")
	}
	if timeout <= 0 {
		return nil, errors.New("command needs a positive timeout")
	}
	id := s.nextID.Add(1)
	ch := make(chan *wire.Message, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, s.err
	}
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	m := &wire.Message{Kind: wire.KindCommand, ID: id, Op: op, Ranks: ranks, Timeout: timeout, Body: body}
	// The tree answers by its deadline; the extra second covers the trip
	// back, so that a dead master is told apart from slow ranks.
	wait := time.NewTimer(timeout + time.Second)
	defer wait.Stop()
	if err := s.link.Send(m); err != nil {
		return s.sendFailed(ctx, op, ch, wait.C, err)
	}
	select {
	case r := <-ch:
		s.awaitOutput(ranks, timeout)
		return r.Groups, nil
	case <-s.ended:
		// The answer may have come just before the end (quit's does):
		// it was handed over before the session ended.
		select {
		case r := <-ch:
			return r.Groups, nil
		default:
		}
		return nil, s.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-wait.C:
		return nil, fmt.Errorf("%s: the master did not answer within %v", op, timeout+time.Second)
	}
}

// sendFailed is the answer to a command whose sending failed. yamux
// reports a write as failed when the session ends while the write waits
// for its confirmation, although the bytes went out; the master's answer
// to quit and its hanging up race like that. A cut write closed the link,
// so the control stream ends soon after: an answer that arrived before
// that end tells. Any other failure (a message too large) sent nothing.
func (s *Session) sendFailed(ctx context.Context, op string, ch <-chan *wire.Message, deadline <-chan time.Time, err error) ([]wire.Group, error) {
	err = fmt.Errorf("send %s: %w", op, err)
	if !errors.Is(err, wire.ErrStreamCut) {
		return nil, err
	}
	select {
	case <-s.ended:
	case <-ctx.Done():
		return nil, err
	case <-deadline:
		return nil, fmt.Errorf("%w; the link did not end after it", err)
	}
	select {
	case r := <-ch:
		return r.Groups, nil
	default:
		return nil, err
	}
}

// Connected returns the ranks whose servers have joined the tree and those
// that have since been lost.
func (s *Session) Connected() (connected, lost wire.RankSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected, s.lost
}

// WaitConnected blocks until every rank's server has joined the tree. It
// fails when ctx ends first or a server is lost, naming the ranks missing.
// progress, when not nil, is told each time more ranks have joined.
func (s *Session) WaitConnected(ctx context.Context, progress func(connected, total int)) error {
	all := wire.All(s.size)
	for {
		s.mu.Lock()
		connected, lost, changed, err := s.connected, s.lost, s.changed, s.err
		s.mu.Unlock()
		if progress != nil {
			progress(connected.Count(), s.size)
		}
		switch {
		case err != nil:
			return err
		case !lost.Empty():
			return fmt.Errorf("ranks %v lost while connecting", lost)
		case connected.Equal(all):
			return nil
		}
		select {
		case <-changed:
		case <-s.ended:
		case <-ctx.Done():
			missing := all.Minus(connected)
			return fmt.Errorf("%d of %d ranks connected; still waiting for ranks %v: %w", connected.Count(), s.size, missing, ctx.Err())
		}
	}
}

// Quit ends the session in order: every server answers quit and exits, and
// the events and output sent before are delivered before Events closes.
// The servers' answers are returned as for any command.
func (s *Session) Quit(ctx context.Context, timeout time.Duration) ([]wire.Group, error) {
	groups, err := s.Command(ctx, wire.All(s.size), wire.OpQuit, nil, timeout)
	if err == nil {
		// The master closes the link once it has answered; waiting for that
		// lets the output stream drain, as fast as the events are read.
		select {
		case <-s.done:
		case <-time.After(timeout):
		}
	}
	s.Close()
	return groups, err
}

// Close ends the session at once; output still on its way is dropped.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	err := s.link.Close()
	<-s.done
	return err
}

// markWait bounds how long an answer waits for the marks of its ranks'
// news. A stop's mark is on its way whenever the stop is, so the wait
// ends sooner unless something broke; a loaded machine takes far less.
const markWait = 5 * time.Second

// awaitOutput lets news of ranks that arrived before their answer, and
// waits for the output before it, be queued before the answer is given:
// once the answer to status is back, the stops it reports can be read.
// It waits while the output stream moves; once the stream stops because
// the output the session holds is not read (budget), the mark is stuck
// behind that output, and the answer goes first. It waits at most
// markWait, or the command's timeout when that is shorter.
func (s *Session) awaitOutput(ranks wire.RankSet, timeout time.Duration) {
	timer := time.NewTimer(min(timeout, markWait))
	defer timer.Stop()
	for {
		s.order.mu.Lock()
		held, changed := s.order.holds(ranks), s.order.changed
		s.order.mu.Unlock()
		stuck, stalled := s.output.stuck()
		if !held || stuck {
			return
		}
		select {
		case <-changed:
		case <-stalled:
		case <-timer.C:
			return
		case <-s.done:
			return
		}
	}
}

func (s *Session) readControl() {
	for {
		m, err := s.link.Recv()
		if err != nil {
			s.end(err)
			return
		}
		switch m.Kind {
		case wire.KindReply:
			s.mu.Lock()
			ch := s.pending[m.ID]
			s.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case wire.KindEvent:
			s.track(m)
			for _, g := range m.Groups {
				s.news(Event{Op: m.Op, Group: g})
			}
			if m.Op == wire.EventLoaded {
				for _, g := range m.Groups {
					// Not here: the answer comes back through this loop.
					go s.answerLoad(g)
				}
			}
		}
	}
}

// news queues an event of the control stream, or holds it until the
// output before it is in (order).
func (s *Session) news(ev Event) {
	s.order.mu.Lock()
	defer s.order.mu.Unlock()
	for _, ev := range s.order.news(ev) {
		s.events.push(ev)
	}
}

// readOutput queues the output stream's pieces as the budget lets it, and
// lets go the news that waited for the marks among them. It reads on after
// the control stream has ended, until the output sent before the end is
// all queued, unless Close gives up on it.
func (s *Session) readOutput() {
	for {
		m, err := s.link.RecvOutput()
		if err != nil {
			return
		}
		if m.Op == wire.EventOutputEnd {
			continue // the master hangs up after it; reading on finds that
		}
		if m.Op == wire.EventOutputMark {
			s.order.mu.Lock()
			for _, g := range m.Groups {
				for _, ev := range s.order.mark(g.Ranks) {
					s.events.push(ev)
				}
			}
			s.order.mu.Unlock()
			continue
		}
		for _, g := range m.Groups {
			if !s.output.acquire(len(g.Body), s.closing) {
				return
			}
			s.events.put(entry{ev: Event{Op: m.Op, Group: g}, budget: s.output})
		}
	}
}

// track keeps the membership of the tree up to date.
func (s *Session) track(m *wire.Message) {
	if m.Op != wire.EventConnected && m.Op != wire.EventLost && m.Op != wire.EventRejoined {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range m.Groups {
		switch m.Op {
		case wire.EventConnected:
			s.connected = s.connected.Union(g.Ranks)
		case wire.EventLost:
			s.lost = s.lost.Union(g.Ranks)
		case wire.EventRejoined:
			s.lost = s.lost.Minus(g.Ranks)
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// end records why the control stream ended. When the master hung up
// (after quit, or gone), the output it sent before is still read; any
// other failure ends the link, and the output stream with it.
func (s *Session) end(err error) {
	hungUp := errors.Is(err, io.EOF)
	if hungUp || errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	close(s.ended)
	if !hungUp {
		s.link.Close()
	}
}

// finish ends the session once both streams have: the news still held
// for output that will not come is let go, and the queue closes.
func (s *Session) finish() {
	s.link.Close()
	s.order.mu.Lock()
	for _, ev := range s.order.end() {
		s.events.push(ev)
	}
	s.order.mu.Unlock()
	s.events.close()
	close(s.done)
}

// logger returns l, or a logger that discards, for optional loggers.
func logger(l *log.Logger) *log.Logger {
	if l == nil {
		return log.New(io.Discard, "", 0)
	}
	return l
}
