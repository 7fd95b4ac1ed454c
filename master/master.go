package master

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/wire"
)

// Options describes a master, the way `sdm --master` starts one.
type Options struct {
	RoutingFile string
	// Generate, when set, makes the master write the routing file itself:
	// one server per host listed, on ports picked at random (PTP's
	// --generate_routes). Servers are then started with --server=ID.
	Generate []string
	Fanout   int
	// RankTree makes the tree one node per server, as the servers were
	// told (sdm.ServerOptions.RankTree).
	RankTree bool
	// Layout says which ranks each server serves (nil: server i, rank i).
	Layout wire.Layout
	// Client is the front end's session address (--host/--port). When
	// empty the master listens on ListenHost:ListenPort (--listen/--port)
	// and the front end dials in; ListenHost "" is the loopback, so that
	// only this host's users can reach the port unless asked otherwise.
	Client     string
	ListenHost string
	ListenPort int
	// Stdio, when set, is the link to the front end (--proxy=stdio).
	Stdio net.Conn
	// Listener, when set, is an inherited socket for the children; its
	// address is then already in the master file.
	Listener    net.Listener
	Timeout     time.Duration // bounds the waits for files, client and children
	Link        wire.LinkConfig
	EventWindow time.Duration
	Log         *log.Logger
	Trace       *log.Logger // what the node does, for --debug
}

// Run serves as the master until the session ends. Its error begins with
// "master:", since the servers write to the same terminal.
func Run(ctx context.Context, o Options) error {
	if err := o.run(ctx); err != nil {
		return fmt.Errorf("master: %w", err)
	}
	return nil
}

func (o Options) run(ctx context.Context) error {
	// The session port comes first: bound later, it could find its port
	// taken by the children's listener, which the kernel picks freely.
	up, err := o.upstream()
	if err != nil {
		return err
	}
	ln, table, err := o.children(ctx)
	if err != nil {
		up.close()
		return err
	}
	node, err := sdm.New(sdm.Config{
		Index: table.Size(), Tree: routing.NewTree(table, o.Fanout, !o.RankTree), Layout: o.Layout,
		Listener: ln, DialUp: up.dial, AcceptUp: up.accept,
		ConnectTimeout: o.Timeout, Link: o.Link, EventWindow: o.EventWindow, Log: o.Log, Trace: o.Trace,
	})
	if err != nil {
		ln.Close()
		up.close()
		return err
	}
	defer up.close()
	return node.Run(ctx)
}

// children returns the routing table and the listener for the master's
// children, writing the routing file (--generate_routes) and the master
// file as needed.
func (o Options) children(ctx context.Context) (net.Listener, *routing.Table, error) {
	var table *routing.Table
	var err error
	size := len(o.Generate)
	if size == 0 {
		waitCtx, cancel := context.WithTimeout(ctx, o.Timeout)
		table, err = routing.Wait(waitCtx, o.RoutingFile)
		cancel()
		if err == nil {
			err = table.Distinct()
		}
		if err != nil {
			return nil, nil, err
		}
		size = table.Size()
	}
	ln := o.Listener
	if ln == nil {
		// Published before a generated routing file is written, so that
		// servers which see the routing file also find the master file.
		if ln, err = publish(o.RoutingFile, size); err != nil {
			return nil, nil, err
		}
	}
	if table == nil {
		if table, err = generate(o.RoutingFile, o.Generate); err != nil {
			ln.Close()
			return nil, nil, err
		}
	}
	return ln, table, nil
}

// upstream is how the master reaches the front end: it dials, or it
// accepts (--listen), and close lets go of what it holds.
type upstream struct {
	dial   func(context.Context) (net.Conn, error)
	accept func(context.Context) (*wire.Link, error)
	close  func()
}

// upstream returns how the master reaches the front end.
func (o Options) upstream() (upstream, error) {
	switch {
	case o.Stdio != nil:
		used := false
		return upstream{dial: func(context.Context) (net.Conn, error) {
			if used {
				return nil, errors.New("the standard input/output link to the front end failed")
			}
			used = true
			return o.Stdio, nil
		}, close: func() {}}, nil
	case o.Client != "":
		return upstream{dial: sdm.DialTCP(o.Client), close: func() {}}, nil
	}
	host := o.ListenHost
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := sdm.Listen(host, o.ListenPort)
	if err != nil {
		return upstream{}, fmt.Errorf("session port: %w", err)
	}
	gate := o.frontEnds(ln)
	return upstream{accept: gate.Next, close: gate.Close}, nil
}

// frontEnds admits the front ends that connect to ln, authenticating them
// side by side: no number of peers without the key, silent or slow,
// keeps the owner out. The master speaks second on these links.
func (o Options) frontEnds(ln net.Listener) *wire.Gate[*wire.Link] {
	logf := func(string, ...any) {}
	if o.Log != nil {
		logf = o.Log.Printf
	}
	refusals := &wire.Refusals{Log: logf, What: "session port"}
	return wire.NewGate(ln, func(conn net.Conn) (*wire.Link, error) {
		return wire.NewLink(conn, wire.Ends{Kind: wire.FrontEndLink}, o.Link)
	}, refusals.Refused)
}

// publish listens on a free port for the children and writes the master
// file that tells the master's children where to connect.
func publish(routingFile string, size int) (net.Listener, error) {
	host := routing.PublicHost()
	ln, err := sdm.Listen(sdm.BindHost(host), 0)
	if err != nil {
		return nil, err
	}
	entry := routing.Entry{Index: size, Host: host, Port: ln.Addr().(*net.TCPAddr).Port}
	if err := routing.Write(routingFile, nil, &entry); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// generate writes a routing file with one server per host
// (routing.Generate).
func generate(path string, hosts []string) (*routing.Table, error) {
	table, err := routing.Generate(hosts)
	if err != nil {
		return nil, fmt.Errorf("--generate_routes: %w", err)
	}
	if err := routing.Write(path, table, nil); err != nil {
		return nil, err
	}
	return table, nil
}
