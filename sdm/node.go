// Package sdm is the tree node: one per rank server, plus the master at the
// root. A node links to its parent (the master: to the front end), accepts
// its children, hands commands for its own rank to its backend, forwards
// each command to the children whose subtrees it reaches, and merges what
// comes back: one reply per command per link, with one group per distinct
// answer, and events batched within a short window. Data enters as
// commands from the parent link and events from the backend and children;
// it leaves as replies and events on the parent link.
//
// The node routes and merges opaque bodies: it does not know what they
// mean, and it never prints. Of an op it takes only its merger (package
// op), which folds the answers of its sources into groups; of an event,
// its fold (op.EventFold), which merges its groups in a batch.
//
// # Commands, replies, deadlines
//
// A node registers a call for each command: one expected answer per
// source (its backend, and each child the set reaches). Calls are
// independent; many may be in flight and a slow one delays no other.
//
// Commands are forwarded to children in arrival order and handed to the
// backend in arrival order. A node never writes to a child's link itself:
// it posts the command to the child's outbox (outbox.go), whose own writer
// sends it, and drops it once its deadline passed, so a child that stops
// reading holds up nothing but its own subtree. Answers and events go up
// without waiting for a link: while a server has none (it rejoins), events
// and output are held for the next one and answers dropped (the parent has
// answered for it). The backend (Backend.Do returns at once and answers
// through a callback) gets them in order too, so break then continue keeps
// its order while a slow command overtakes nothing.
//
// Each level gives its children a slightly shorter deadline (a tenth, at
// most 250 ms, less), so that a child's "these ranks timed out" arrives
// before the parent would have to write off the whole subtree.
//
// Statuses are ok, error (the backend said why), timeout, lost and no such
// rank. Failures carry their reason as the body and merge like answers.
// The front end always gets every rank it asked about accounted for.
//
// A child not heard from for 5 s while an answer is due from it
// (Config.NotResponding: five pings, one a second) is quiet: the calls
// waiting for it complete for its subtree as timeout with "server N not
// responding". Later commands still go to it, but wait for it only 500 ms
// (quietGrace) before they say the same: one that is back answers within
// it, at once, where answering for it at once would tell a stale "not
// responding" until its parent's next look (a second). Its ranks then
// answer as they were.
//
// A child whose link breaks turns its whole subtree into lost, with the
// cause ("connection closed by server N", "no word from server N for
// 1m0s: link dropped", a tampered record): pending calls complete for
// those ranks, later commands get lost at once, and one lost event goes
// up.
//
// A server whose link to its parent breaks dials again, for as long as its
// connect deadline (60 s) allows, and is taken back like a new child:
// handshake, hello, the parent checking the index; its first message is a
// rejoined event for the ranks of its subtree that are back. A parent that
// refuses the connection is gone: the server ends, and with it its own
// children, so nothing below a killed server stays.
//
// quit is handled by the nodes: each flushes the events it holds, answers,
// and closes its link upwards, so everything sent before the quit reaches
// the front end.
//
// # Events
//
// Events from the backend and from children go into a batch per link.
// Within the window (10 ms, --event_window) an event folds into an earlier
// group of the same event, by the event's fold, unless a later group holds
// one of its ranks, so each rank's events keep their order whatever the
// fold merges (the node keeps that rule; the fold knows nothing of order).
// A batch is sent when the window ends, when the op changes, or at once
// when it already covers every rank below the node (a breakpoint all ranks
// hit, a subtree that has fully joined), since nothing more could merge
// into it. Leaves send at once.
//
// Tree membership travels as connected and lost events (the client keeps
// the sets). A node sends what events it holds before any answer, so an
// answer never overtakes news from before it: once the front end has the
// answer to status, it has every stop that status reports.
//
// # The output stream
//
// A node's output stream (outputStream) queues what comes in from its
// children, up to 256 KiB, beyond which it stops reading their output
// streams (yamux's window fills and their writers block). It folds the
// lines of several ranks as the event batcher does, by the fold of output
// (identical lines; a rank that prints the same line twice is heard
// twice), and one writer sends the queue up whenever the parent takes
// more: under a flood each write carries what gathered during the one
// before, so the merging costs no extra round trips.
//
// Control traffic never waits for output: events and answers go on the
// control stream. A stop or exit of a rank puts a mark
// (wire.EventOutputMark) in the output stream after the output the rank
// wrote before it; the front end holds the stop until the mark arrives
// (package client).
//
// quit waits, up to its deadline, for the output queued before it to go
// up; then the node sends the end of its output (wire.EventOutputEnd) and
// its answer. A parent counts a child's answer to quit only once it has
// read that end, since it reads the two streams apart: the child's last
// output is then in the parent's own queue before the parent flushes it
// and answers in turn.
package sdm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// Config describes one node. Index, Tree, DialUp (or AcceptUp)
// and Link.Key are required.
type Config struct {
	Index int          // this node's index; Tree.Master() for the master
	Tree  routing.Tree // the shape of the whole tree
	// Listener is where children connect; nil for a node without children.
	Listener net.Listener
	// Local is where the servers of this node's host connect, when it is
	// their leader (routing.Hosts): a Unix socket, whose peers are linked
	// without the handshake (wire.NewLocalLink).
	Local net.Listener
	// DialUp connects to the parent (for the master: to the front end).
	// It is retried until ConnectTimeout passes.
	DialUp func(ctx context.Context) (net.Conn, error)
	// AcceptUp, set instead of DialUp for a master started without
	// --host, waits for the next front end that connects and proves it
	// holds the key (a wire.Gate, whose handshakes proceed side by side):
	// the master is then the handshake's responder, and its refusals are
	// the gate's to tell.
	AcceptUp func(ctx context.Context) (*wire.Link, error)
	// ConnectTimeout bounds the wait for the parent (default 60 s): at
	// first, and again each time a server's link to its parent breaks and
	// it dials again to rejoin.
	ConnectTimeout time.Duration
	// NotResponding is how long a child may go unheard while an answer
	// is due from it (the node pings it every second meanwhile) before
	// commands stop waiting for it: its ranks are answered at once as not
	// responding, until it is heard from again (default 5 s).
	NotResponding time.Duration
	Link          wire.LinkConfig
	// Layout says which ranks each server serves (nil: server i serves
	// rank i). Every node of a tree has the same.
	Layout wire.Layout
	// Backends debug this node's ranks, Layout.Ranks(Index), each under
	// its rank; none for the master.
	Backends map[int]backend.Backend
	// EventWindow is how long a node with children holds events to merge
	// them with the same news from other ranks (default 10 ms).
	EventWindow time.Duration
	// Log receives the node's complaints about peers (discarded when nil).
	Log *log.Logger
	// Trace, when set, receives what the node does: children joining,
	// commands arriving (sdm --debug).
	Trace *log.Logger
	// AfterAnswer, when set, is called after each answer of the node has
	// gone up (a rank server trims itself once they stop for a while: it
	// lets go of the pages of its executable, and collects what its
	// commands left: resident.Trimmer).
	AfterAnswer func()
	// Joined, when set, is called once the node has first joined its
	// parent: its start is over (a rank server collects then what a
	// large start left: resident.Trimmer.Started).
	Joined func()
	// Adopt, when set, has a host's leader serve its members' ranks
	// itself (routing.Tree.Local): a member hands its rank over on Local
	// (wire.AcceptMember) instead of joining as a child, and Adopt makes
	// the rank's backend, whose debugger member m starts (wire.Member.Spawn).
	// Without a layout only: one rank per server.
	Adopt func(rank int, m *wire.Member) (backend.Backend, error)
}

// quitWait bounds how long a node that is told to stop waits for its
// children to answer the quit it sends them.
const quitWait = 2 * time.Second

// shutdownID is the id of the quit a stopping node sends its children; the
// front end's ids count up from 1 and never reach it.
const shutdownID = ^uint64(0)

// DefaultEventWindow is the default Config.EventWindow.
const DefaultEventWindow = 10 * time.Millisecond

// DefaultNotResponding is the default Config.NotResponding: five pings
// missed. A server that runs answers a ping within milliseconds, even on
// a node busy with hundreds of gdbs; one that has not for five seconds is
// stopped, starved or cut off, and a command that waited for it would
// wait out its whole deadline (30 s at the console) each time.
const DefaultNotResponding = 5 * time.Second

// Node is a running tree node.
type Node struct {
	cfg      Config
	self     wire.RankSet // this node's own ranks; empty at the master
	members  wire.RankSet // of those, the ranks its members hand over (Config.Adopt)
	reach    wire.RankSet // self and every subtree below
	size     int          // the ranks of the whole job
	servers  int          // the servers of the tree; the master's index
	parent   int          // the parent's index; -1 for the front end
	children map[int]*child
	log      *log.Logger
	// handshakes bounds those under way on the node's ports; refusals
	// tells of the peers they turned away, with counts, not a line each.
	handshakes wire.Pending
	refusals   wire.Refusals

	upMu     sync.Mutex
	up       *wire.Link    // the link to the parent; nil while there is none
	held     []upward      // what waits for a link to the parent
	upClosed bool          // Run is ending: a new link to the parent is closed at once
	stopped  chan struct{} // closed when Run is ending
	events   *batcher
	output   *outputStream
	// answered carries the settling of each rank's backend's answers to
	// its pumpBackend, which settles them in order with its events.
	answered map[int]chan func()

	mu sync.Mutex
	// ranks are the backends serving the node's own ranks: all of them
	// from the start, but members' from when they hand them over; absent
	// says why a member's rank has none.
	ranks    map[int]*served
	absent   map[int]string
	calls    map[uint64]*call
	quitting bool     // the session is ending: lost children are expected
	quitAcks chan int // children's answers to a stopping node's quit
}

// child is the slot of one child in the tree, connected or not.
type child struct {
	index int
	ranks wire.RankSet // the ranks of its subtree
	link  *wire.Link   // nil until it connects, and after it is lost
	out   *outbox      // the commands on their way down link
	lost  string       // why it was lost
	// quiet: not heard from for Config.NotResponding, so commands do not
	// wait for it.
	quiet bool
	// joined is what of its subtree has joined through this link, as its
	// connected and rejoined events said: what this node, rejoining its
	// own parent, says is back.
	joined wire.RankSet
	// gone is what of its subtree its link reported lost (and not back
	// since): its own loss does not report those ranks again.
	gone      wire.RankSet
	connected bool   // it has connected before: a new link is a rejoin
	host      string // where it connected from: its hello's host, else its address
}

// name is how messages name the child: by its index, and its host once
// it has connected. The node's mutex guards it.
func (c *child) name() string {
	if c.host == "" {
		return fmt.Sprintf("server %d", c.index)
	}
	return fmt.Sprintf("server %d on %s", c.index, c.host)
}

// serverName names child index (child.name), with the node's mutex held.
func (n *Node) serverName(index int) string {
	if c := n.children[index]; c != nil {
		return c.name()
	}
	return fmt.Sprintf("server %d", index)
}

// New checks cfg and prepares a node; Run brings it up.
func New(cfg Config) (*Node, error) {
	master := cfg.Index == cfg.Tree.Master()
	if err := cfg.check(master); err != nil {
		return nil, err
	}
	kids, members := cfg.split()
	if (len(kids) > 0 || !members.Empty()) && cfg.Listener == nil && cfg.Local == nil {
		return nil, fmt.Errorf("sdm: index %d has children %v but no listener", cfg.Index, kids)
	}
	cfg.defaults()
	n := &Node{
		cfg:      cfg,
		children: make(map[int]*child, len(kids)),
		log:      cfg.Log,
		stopped:  make(chan struct{}),
		calls:    make(map[uint64]*call),
		quitAcks: make(chan int, len(kids)),
		answered: make(map[int]chan func(), len(cfg.Backends)),
		size:     cfg.Layout.Size(cfg.Tree.Size),
		members:  members,
		ranks:    make(map[int]*served, len(cfg.Backends)),
		absent:   make(map[int]string),
	}
	if n.log == nil {
		n.log = log.New(io.Discard, "", 0)
	}
	n.refusals = wire.Refusals{Log: n.log.Printf, What: "tree port"}
	n.place(kids, master)
	// The node keeps what it needs of the tree and lets go of the rest:
	// its hosts (every server's host, every host's servers) are
	// megabytes in each of a host's servers at 100k ranks.
	n.servers, n.parent = cfg.Tree.Size, cfg.Tree.Parent(cfg.Index)
	n.cfg.Tree = routing.Tree{}
	// A leaf of one rank has no one to merge with, so it sends at once.
	window := cfg.EventWindow
	if len(kids) == 0 && n.self.Count() <= 1 {
		window = 0
	}
	// Output goes up a stream of its own, at the pace the parent takes
	// it; events never wait for it. A mark in the output stream tells the
	// front end where the output before each stop ends.
	n.output = newOutputStream(window, n.reach, func(m *wire.Message) { n.sendUp(m, (*wire.Link).SendOutput) }, n.stopped)
	n.events = newBatcher(window, n.reach, func(m *wire.Message) { n.sendUp(m, (*wire.Link).Send) })
	return n, nil
}

// check refuses a Config that cannot make a node.
func (cfg *Config) check(master bool) error {
	if err := cfg.Tree.Verify(); err != nil {
		return err
	}
	if !cfg.Tree.Valid(cfg.Index) {
		return fmt.Errorf("index %d is not in a tree of %d servers", cfg.Index, cfg.Tree.Size)
	}
	if cfg.DialUp == nil && cfg.AcceptUp == nil {
		return errors.New("sdm: Config.DialUp or AcceptUp is required")
	}
	if cfg.Adopt != nil && cfg.Layout != nil {
		return errors.New("sdm: a node with a layout adopts no ranks")
	}
	if cfg.Layout != nil {
		if len(cfg.Layout) != cfg.Tree.Size {
			return fmt.Errorf("sdm: a layout of %d servers for a tree of %d", len(cfg.Layout), cfg.Tree.Size)
		}
		if err := cfg.Layout.Verify(); err != nil {
			return err
		}
	}
	return cfg.checkBackends(master)
}

// split parts the node's children in the tree into those that link to
// it and, for a node that adopts its host's ranks, the members that hand
// their ranks over.
func (cfg *Config) split() ([]int, wire.RankSet) {
	kids := cfg.Tree.Children(cfg.Index)
	if cfg.Adopt == nil {
		return kids, wire.RankSet{}
	}
	var members wire.Builder
	kids = slices.DeleteFunc(slices.Clone(kids), func(k int) bool {
		if cfg.Tree.Local(k) {
			members.Add(k)
			return true
		}
		return false
	})
	return kids, members.Set()
}

// defaults fills in the durations left zero.
func (cfg *Config) defaults() {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 60 * time.Second
	}
	if cfg.EventWindow <= 0 {
		cfg.EventWindow = DefaultEventWindow
	}
	if cfg.NotResponding <= 0 {
		cfg.NotResponding = DefaultNotResponding
	}
}

// place sets up the ranks the node serves itself, those its members
// will hand it, and those under each child: what it reaches.
func (n *Node) place(kids []int, master bool) {
	cfg := &n.cfg
	var reach wire.Builder
	if !master {
		n.self = cfg.Layout.Ranks(cfg.Index).Union(n.members)
		reach.AddSet(n.self)
	}
	for r, be := range cfg.Backends {
		n.answered[r] = make(chan func())
		n.ranks[r] = &served{be: be, pumped: make(chan struct{})}
	}
	n.members.Each(func(r int) bool {
		n.answered[r] = make(chan func())
		n.absent[r] = fmt.Sprintf("server %d has not handed rank %d over", r, r)
		return true
	})
	for _, k := range kids {
		var b wire.Builder
		cfg.Tree.Walk(k, func(i int) { b.AddSet(cfg.Layout.Ranks(i)) })
		c := &child{index: k, ranks: b.Set(), lost: fmt.Sprintf("server %d has not connected", k)}
		reach.AddSet(c.ranks)
		n.children[k] = c
	}
	n.reach = reach.Set()
}

// Run connects the node and serves until the session ends or ctx does.
// A server whose link to its parent breaks dials it again and rejoins;
// it ends when that fails (the parent refuses the connection, or
// Config.ConnectTimeout passes), so that nothing below a parent that is
// gone stays behind. Run returns nil when the session ended with a quit
// command.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		// Stopped by our owner (a signal) rather than by a broken parent:
		// the children are told to quit, so that they stop as cleanly.
		graceful := ctx.Err() != nil
		cancel()
		close(n.stopped)
		n.shutdown(graceful)
		wg.Wait()
	}()
	for _, ln := range []net.Listener{n.cfg.Listener, n.cfg.Local} {
		if ln == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.acceptChildren(ctx, ln, &wg)
		}()
		context.AfterFunc(ctx, func() { ln.Close() })
	}
	if len(n.children) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.watchChildren(ctx)
		}()
	}
	up, err := n.connectUp(ctx, false)
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, n.closeUp)
	n.setUp(up, nil)
	if n.cfg.Joined != nil {
		n.cfg.Joined()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.output.run()
	}()
	for r := range n.cfg.Backends {
		s, _ := n.rank(r)
		n.pump(r, s, &wg)
	}
	if own := n.self.Minus(n.members); !own.Empty() {
		n.events.add(wire.EventConnected, wire.Group{Ranks: own})
	}
	for {
		err := n.serveParent(ctx, up)
		if n.ending(ctx) {
			return nil
		}
		reason := linkLoss(n.parentName(), n.cfg.Link, err)
		if n.self.Empty() {
			return fmt.Errorf("lost the link to %s (%s): %s", n.parentName(), up.RemoteAddr(), reason)
		}
		n.dropUp()
		n.log.Printf("lost the link to %s (%s): %s; dialling it again", n.parentName(), up.RemoteAddr(), reason)
		if up, err = n.rejoin(ctx); err != nil {
			if n.ending(ctx) {
				return nil
			}
			return fmt.Errorf("lost the link to %s (%s) and could not rejoin: %w", n.parentName(), reason, err)
		}
	}
}

// serveParent runs the commands that come down up until it breaks.
func (n *Node) serveParent(ctx context.Context, up *wire.Link) error {
	for {
		m, err := up.Recv()
		if err != nil {
			return err
		}
		if m.Kind != wire.KindCommand {
			n.log.Printf("ignoring %s %q from parent", m.Kind, m.Op)
			continue
		}
		n.command(ctx, m)
	}
}

// ending says whether the node is stopping on purpose: quit, or its owner.
func (n *Node) ending(ctx context.Context) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.quitting || ctx.Err() != nil
}

// rejoin dials the parent again after the link broke. The parent takes a
// child back as it took it at first (handshake and hello); the first
// thing the child says is which of its ranks are back, before anything
// that waited for the link goes up.
func (n *Node) rejoin(ctx context.Context) (*wire.Link, error) {
	up, err := n.connectUp(ctx, true)
	if err != nil {
		return nil, err
	}
	back := n.present()
	n.mu.Lock()
	for _, c := range n.children {
		back = back.Union(c.joined)
	}
	n.mu.Unlock()
	n.log.Printf("rejoined %s (%s)", n.parentName(), up.RemoteAddr())
	n.setUp(up, &wire.Message{Kind: wire.KindEvent, Op: wire.EventRejoined,
		Groups: []wire.Group{{Ranks: back, Body: fmt.Appendf(nil, "server %d reconnected", n.cfg.Index)}}})
	return up, nil
}

// parentName says who the parent is, for messages.
func (n *Node) parentName() string {
	switch p := n.parent; p {
	case -1:
		return "the front end"
	case n.servers:
		return "the master"
	default:
		return fmt.Sprintf("parent server %d", p)
	}
}

// shutdown closes the backend and every child link, telling the children
// to quit first when the node stops gracefully.
func (n *Node) shutdown(graceful bool) {
	n.mu.Lock()
	// The session over (quit) or the node stopped: the members are let
	// go as well as the children.
	over := graceful || n.quitting
	n.quitting = true // children going away now is no news
	var links []*wire.Link
	for _, c := range n.children {
		if c.link != nil {
			links = append(links, c.link)
			if graceful {
				c.out.post(&wire.Message{Kind: wire.KindCommand, ID: shutdownID, Op: wire.OpQuit, Ranks: c.ranks, Timeout: quitWait},
					time.Now().Add(quitWait))
			}
		}
	}
	n.mu.Unlock()
	// Closing the links before the children have read the quit would make
	// them fail instead of stopping: wait for their answers.
	if graceful {
		// A child that is gone (its link closed) will not answer.
		gone := make(chan struct{}, len(links))
		for _, l := range links {
			go func() {
				select {
				case <-l.Done():
					gone <- struct{}{}
				case <-time.After(quitWait):
				}
			}()
		}
		deadline := time.After(quitWait)
	acks:
		for range links {
			select {
			case <-n.quitAcks:
			case <-gone:
			case <-deadline:
				break acks
			}
		}
	}
	n.mu.Lock()
	for _, l := range links {
		l.Close()
	}
	for _, c := range n.calls {
		c.timer.Stop()
	}
	ranks := n.ranks
	n.ranks = map[int]*served{}
	n.mu.Unlock()
	for _, s := range ranks {
		s.be.Close()
	}
	// Their debuggers gone, the members are let go without an error.
	for _, s := range ranks {
		if s.member != nil {
			s.member.Close(over)
		}
	}
}

// pumpBackend forwards the events of rank r's backend up, tagged with
// the rank, and settles the backend's answers. An answer is settled only
// after every event the backend sent before it: by then those are in the
// events channel, and an answer waits here until the channel is drained.
// So an answer never overtakes news from before it (a status that says
// stopped comes after the stop), which settle keeps on the way up.
func (n *Node) pumpBackend(r int, be backend.Backend) {
	events, rank := be.Events(), wire.Single(r)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			n.forward(rank, ev)
		case settle := <-n.answered[r]:
			for drained := false; !drained; {
				select {
				case ev, ok := <-events:
					if !ok {
						settle()
						return
					}
					n.forward(rank, ev)
				default:
					drained = true
				}
			}
			settle()
		}
	}
}

// forward adds one of the events of rank's backend to what goes up.
// Output never blocks here: the backend bounds it (backend.Event.Sent),
// and this goroutine also carries the rank's stops and answers. A stop or
// an exit puts a mark in the output stream after the output the backend
// sent before it.
func (n *Node) forward(rank wire.RankSet, ev backend.Event) {
	g := wire.Group{Ranks: rank, Body: ev.Body}
	switch ev.Op {
	case wire.EventOutput:
		n.output.add(g, ev.Sent, false)
		return
	case wire.EventStopped, wire.EventExited:
		n.output.mark(rank)
	}
	if n.cfg.Trace != nil {
		n.cfg.Trace.Printf("event %s", ev.Op)
	}
	n.events.add(ev.Op, g)
}

// checkBackends says whether c has a backend for each of its node's ranks
// and no other: none at the master.
func (c Config) checkBackends(master bool) error {
	if master {
		if len(c.Backends) > 0 {
			return errors.New("sdm: the master has no backend")
		}
		return nil
	}
	own := c.Layout.Ranks(c.Index)
	if len(c.Backends) != own.Count() {
		return fmt.Errorf("sdm: server %d serves ranks %v but has %d backends", c.Index, own, len(c.Backends))
	}
	for r := range c.Backends {
		if !own.Contains(r) {
			return fmt.Errorf("sdm: server %d has a backend for rank %d, which it does not serve (%v)", c.Index, r, own)
		}
	}
	return nil
}
