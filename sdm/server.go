package sdm

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strconv"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// ServerOptions describes a rank server, the way `sdm --routing_file F
// [--server=ID]` starts one.
type ServerOptions struct {
	Index       int    // this server's index: its rank, without a Layout
	RoutingFile string // the shared routing file, and beside it the master file
	// RoutesFrom says how the server finds the routing table; the wait
	// for it lasts at most Timeout.
	RoutesFrom RoutesFrom
	Fanout     int // tree shape, the same for every server (routing.Tree)
	// RankTree makes the tree one node per server (routing.Tree without
	// Hosts), where otherwise the servers of a host share one node
	// (routing.Hosts). Every server and the master must agree.
	RankTree bool
	// Layout, when set, says which ranks each server serves: this one
	// runs a backend for each of its own.
	Layout wire.Layout
	// Listener, when set, is the listening socket to use (inherited, or
	// bound before publishing it) instead of binding the port of our entry
	// in the routing file.
	Listener net.Listener
	// NewBackend creates a rank's backend once the job size is known.
	NewBackend func(backend.Config) (backend.Backend, error)
	// Timeout bounds the wait for the routing file and for the parent.
	Timeout     time.Duration
	Link        wire.LinkConfig
	EventWindow time.Duration
	Log         *log.Logger
	Trace       *log.Logger // what the node does, for --debug
	AfterAnswer func()      // Config.AfterAnswer
	Joined      func()      // Config.Joined; a member that hands its rank over calls AfterAnswer instead
	// Handover, when set, has the servers of a host other than its leader
	// hand their ranks to the leader, which serves them (Config.Adopt),
	// where otherwise each serves its own rank as the leader's child.
	// Every server of a job must agree (routing.Hands decides); Serve
	// refuses it with RankTree or a Layout.
	Handover *Handover
}

// Handover is how a host's servers hand their ranks to its leader.
type Handover struct {
	// Adopt makes, at the leader, the backend of a member's rank.
	Adopt func(backend.Config, *wire.Member) (backend.Backend, error)
	// Spawn starts, at a member, the debugger its leader asks for.
	Spawn func() (member.Spawned, error)
}

// Serve runs a rank server: it waits for the routing file, listens for its
// children, connects to its parent and serves until the session ends. Its
// error begins with "rank N:" (or "server N (ranks R):" with a Layout),
// since many servers write to one terminal.
func Serve(ctx context.Context, o ServerOptions) error {
	if err := o.serve(ctx); err != nil {
		return fmt.Errorf("%s: %w", o.Name(), err)
	}
	return nil
}

// Name is how the server's messages name it: by its rank, or by its index
// and ranks with a Layout.
func (o ServerOptions) Name() string {
	if o.Layout == nil {
		return fmt.Sprintf("rank %d", o.Index)
	}
	if o.Index < 0 || o.Index >= len(o.Layout) {
		return fmt.Sprintf("server %d", o.Index)
	}
	return fmt.Sprintf("server %d (ranks %v)", o.Index, o.Layout[o.Index])
}

func (o ServerOptions) serve(ctx context.Context) error {
	tree, table, ln, err := o.routes(ctx)
	if err != nil {
		return err
	}
	handing := o.Handover != nil
	if handing && (o.RankTree || o.Layout != nil) {
		if ln != nil {
			ln.Close()
		}
		return errors.New("a server hands its rank over only in a tree of hosts whose servers start with a rank each (routing.Hands)")
	}
	if handing && tree.Local(o.Index) {
		if ln != nil {
			ln.Close()
		}
		return o.member(ctx, tree.Parent(o.Index), tree.Size)
	}
	ln, local, err := o.listen(tree, table, ln, handing)
	if err != nil {
		return err
	}
	closeListeners := func() {
		for _, l := range []net.Listener{ln, local} {
			if l != nil {
				l.Close()
			}
		}
	}
	parent := tree.Parent(o.Index)
	if err := resolves(table, parent); err != nil {
		closeListeners()
		return err
	}
	dial := o.dialParent(tree, table, parent)
	backends, err := o.backends(o.Layout.Size(tree.Size), o.Layout.Ranks(o.Index))
	if err != nil {
		closeListeners()
		return err
	}
	cfg := Config{
		Index: o.Index, Tree: tree, Listener: ln, Local: local, DialUp: dial, ConnectTimeout: o.Timeout,
		Link: o.Link, Layout: o.Layout, Backends: backends, EventWindow: o.EventWindow, Log: o.Log, Trace: o.Trace,
		AfterAnswer: o.AfterAnswer, Joined: o.Joined,
	}
	if handing {
		size := tree.Size
		cfg.Adopt = func(r int, m *wire.Member) (backend.Backend, error) {
			return o.Handover.Adopt(backend.Config{Rank: r, Size: size}, m)
		}
	}
	node, err := New(cfg)
	if err != nil {
		closeAll(backends)
		return err
	}
	return node.Run(ctx)
}

// routes waits for the server's routing table and makes its tree; ln
// is the port it was handed or bound, if any.
func (o ServerOptions) routes(ctx context.Context) (routing.Tree, *routing.Table, net.Listener, error) {
	routes, ln, err := o.RoutesFrom.open(o.Index, o.RoutingFile, o.Listener)
	if err != nil {
		return routing.Tree{}, nil, nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	table, err := routes(waitCtx)
	cancel()
	fail := func(err error) (routing.Tree, *routing.Table, net.Listener, error) {
		if ln != nil {
			ln.Close()
		}
		return routing.Tree{}, nil, nil, err
	}
	if err != nil {
		return fail(err)
	}
	tree := routing.NewTree(table, o.Fanout, !o.RankTree)
	if err := tree.Verify(); err != nil {
		return fail(err)
	}
	if o.Index >= table.Size() {
		what := "ranks" // one per server
		if o.Layout != nil {
			what = "servers"
		}
		return fail(fmt.Errorf("routing file %s has only %s 0-%d", o.RoutingFile, what, table.Size()-1))
	}
	if o.Layout != nil && len(o.Layout) != table.Size() {
		return fail(fmt.Errorf("routing file %s has %d servers, the layout %d", o.RoutingFile, table.Size(), len(o.Layout)))
	}
	return tree, table, ln, nil
}

// dialParent is how the server reaches its parent: a member dials its
// host's leader on the host; the others dial their parent's routing
// entry (the master's in the master file).
func (o ServerOptions) dialParent(tree routing.Tree, table *routing.Table, parent int) func(context.Context) (net.Conn, error) {
	if tree.Local(o.Index) {
		return DialLocal(wire.LocalAddress(o.Link.Key, parent))
	}
	// The closure keeps the parent's entry, not the table: megabytes at
	// 100k ranks.
	parentEntry, _ := table.Lookup(parent)
	master, size := parent == tree.Master(), tree.Size
	return func(ctx context.Context) (net.Conn, error) {
		entry := parentEntry
		if master {
			// Read afresh on every attempt: a master file left over from an
			// earlier run is replaced when this run's master starts.
			var err error
			if entry, err = routing.ReadMaster(o.RoutingFile, size); err != nil {
				return nil, err
			}
		}
		return DialTCP(net.JoinHostPort(dialHost(entry.Host), strconv.Itoa(entry.Port)))(ctx)
	}
}

// listen opens what the server's children reach it on: ln, the TCP port
// of its routing entry (bound here unless it was handed one), when a
// child is on another host; local, the Unix socket of the host's leader
// (wire.LocalAddress), when a child is on this one. A port handed to a
// server that no child dials is closed.
func (o ServerOptions) listen(tree routing.Tree, table *routing.Table, ln net.Listener, handing bool) (_, local net.Listener, err error) {
	var remote, here bool
	for _, k := range tree.Children(o.Index) {
		if tree.Local(k) {
			here = true
		} else {
			remote = true
		}
	}
	if ln != nil && !remote {
		ln.Close()
		ln = nil
	}
	if ln == nil && remote {
		entry, _ := table.Lookup(o.Index)
		if ln, err = Listen(BindHost(entry.Host), entry.Port); err != nil {
			return nil, nil, fmt.Errorf("routing file %s: %w", o.RoutingFile, err)
		}
	}
	if here {
		addr, kind := wire.LocalAddress(o.Link.Key, o.Index), "unix"
		if handing {
			kind = "unixpacket" // wire.AcceptMember
		}
		if local, err = net.ListenUnix(kind, addr); err != nil {
			if ln != nil {
				ln.Close()
			}
			return nil, nil, fmt.Errorf("cannot listen for the servers of this host on %s: %w", addr, err)
		}
	}
	return ln, local, nil
}

// resolves says why the host of index's entry in table does not resolve,
// naming the entry's line: a name no one can reach is refused at once
// rather than dialled until the timeout. The master's entry is in the
// master file, read at each attempt; a host that is this one is reached
// on the loopback.
func resolves(table *routing.Table, index int) error {
	entry, ok := table.Lookup(index)
	if !ok || routing.Local(entry.Host) || net.ParseIP(entry.Host) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(ctx, entry.Host); err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) && !dns.IsNotFound {
			return nil // the name service may answer later: the dial retries
		}
		return fmt.Errorf("%s: server %d's host %q does not resolve: %w", table.Where(index), index, entry.Host, err)
	}
	return nil
}

// backends creates the backend of each of ranks, in a job of size ranks.
func (o ServerOptions) backends(size int, ranks wire.RankSet) (map[int]backend.Backend, error) {
	backends := make(map[int]backend.Backend, ranks.Count())
	var err error
	ranks.Each(func(r int) bool {
		var be backend.Backend
		if be, err = o.NewBackend(backend.Config{Rank: r, Size: size}); err == nil {
			backends[r] = be
		}
		return err == nil
	})
	if err != nil {
		closeAll(backends)
		return nil, err
	}
	return backends, nil
}

func closeAll(backends map[int]backend.Backend) {
	for _, be := range backends {
		be.Close()
	}
}

// Listen listens on host:port ("" for every interface), and says at once
// when the port is taken instead of retrying.
func Listen(host string, port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), err)
	}
	return ln, nil
}

// BindHost is the address to bind for a port that children reach at
// host, as a routing or master file names it: a literal address is bound
// as it is, so the port is reachable there and nowhere else; so is the
// address of this host's interface that a host name resolves to
// (routing.InterfaceOf). A name that resolves to none (only to the
// loopback, as 127.0.1.1 in this host's own /etc/hosts) may stand for
// other addresses on other hosts, so its port listens on every interface.
func BindHost(host string) string {
	if ip := net.ParseIP(host); ip != nil {
		return host
	}
	return routing.InterfaceOf(host)
}

// dialHost is where a child dials its parent's host: the loopback for a
// parent on this host that listens on every interface, the address it
// binds for one that binds one (BindHost), the host itself elsewhere.
func dialHost(host string) string {
	if !routing.Local(host) {
		return host
	}
	if bound := BindHost(host); bound != "" {
		return bound
	}
	return "127.0.0.1"
}
