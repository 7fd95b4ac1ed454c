package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/internal/handover"
	"github.com/sdm-hpc/sdm/master"
	"github.com/sdm-hpc/sdm/rm/routes"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/wire"
)

// backends maps each debugger to its constructor.
var backends = map[backend.Debugger]func(backend.Config) (backend.Backend, error){
	backend.GDB: func(c backend.Config) (backend.Backend, error) { return gdbmi.New(c), nil },
	backend.Sim: func(c backend.Config) (backend.Backend, error) { return sim.New(c), nil },
}

// serverFlags are the flags of a rank server and of the master.
type serverFlags struct {
	debugger, debuggerPath, proxy, host, listen *string
	generate, routingFile, keyFile, routesMode  *string
	port, server, debug, fanout, portBase       *int
	isMaster                                    *bool
	timeout, window                             *time.Duration
}

func newServerFlags(fs *pflag.FlagSet) *serverFlags {
	return &serverFlags{
		debugger:     fs.String("debugger", "gdb-mi", "debugger backend: gdb-mi or sim (simulated program, for tests and scale runs)"),
		debuggerPath: fs.String("debugger_path", "", "path of the debugger executable (default: found in $PATH)"),
		proxy:        fs.String("proxy", "tcp", "master's link to the front end: tcp, or stdio (standard input and output)"),
		host:         fs.String("host", "", "master: the front end's host, which the master dials; without it the master listens on --listen and --port"),
		listen:       fs.String("listen", "127.0.0.1", "master without --host: the address its session port binds (0.0.0.0 for every interface, for a front end on another host)"),
		port:         fs.Int("port", 12345, "master: the front end's session port"),
		isMaster:     fs.Bool("master", false, "run as the master, the root of the tree"),
		server:       fs.Int("server", -1, "this server's index (default: from the environment)"),
		generate:     fs.String("generate_routes", "", "master: write the routing file for servers on these comma-separated hosts (servers then need --server=ID)"),
		routingFile:  fs.String("routing_file", "routing_file", "the routing file shared by the job"),
		debug:        fs.Int("debug", 0, "log more to standard error (--debug or --debug=LEVEL)"),
		keyFile:      fs.String("key-file", "", "file holding the session key (mode 0600), instead of $"+wire.KeyEnv),
		fanout:       fs.Int("fanout", 0, "tree shape: 0 for PTP's binomial tree, K >= 2 for a K-ary tree; the same for every server"),
		timeout:      fs.Duration("timeout", 60*time.Second, "how long to wait for the routing file, the parent and the front end"),
		window:       fs.Duration("event_window", sdm.DefaultEventWindow, "how long a node holds events to merge them with other ranks'"),
		routesMode:   fs.String("routes_from", "file", "how a server finds the routing table: file (wait for --routing_file), publish (bind any port, publish it, wait for the file the front end writes), slurm or pe (compute it from the launcher's variables)"),
		portBase:     fs.Int("port_base", 0, "with --routes_from=slurm or pe: the port of each node's first server (the next ones count up)"),
	}
}

// serverCommon is what the master and a rank server share.
type serverCommon struct {
	index     int // -1 for the master
	who       string
	inherited net.Listener
	link      wire.LinkConfig
	logger    *log.Logger
	trace     *log.Logger
}

func runServer(args []string) error {
	fs := pflag.NewFlagSet("sdm", pflag.ContinueOnError)
	f := newServerFlags(fs)
	fs.Lookup("debug").NoOptDefVal = "1"
	if help, err := parseFlags(fs, args, helpFile("server")); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("unexpected argument %q (servers take flags only; see sdm --help)", fs.Arg(0)))
	}
	c, err := f.common()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if *f.isMaster {
		o, err := f.master(c)
		if err != nil {
			return err
		}
		return quietOnCancel(ctx, master.Run(ctx, o))
	}
	o, err := f.rankServer(c)
	if err != nil {
		return fmt.Errorf("%s: %w", c.who, err)
	}
	return quietOnCancel(ctx, sdm.Serve(ctx, o))
}

// common takes what the server was handed (handover.Take) and its index,
// and readies the logs.
func (f *serverFlags) common() (serverCommon, error) {
	c := serverCommon{index: -1, who: "master"}
	h, err := handover.Take(*f.keyFile)
	if err != nil {
		return c, err
	}
	c.inherited, c.link = h.Listener, wire.LinkConfig{Key: h.Key}
	if !*f.isMaster {
		i, source, err := routing.Index(*f.server, nil)
		if err != nil {
			return c, err
		}
		c.index, c.who = i, fmt.Sprintf("rank %d", i)
		if *f.debug > 0 {
			fmt.Fprintf(os.Stderr, "sdm[%s]: index from %s\n", c.who, source)
		}
	}
	c.logger = log.New(os.Stderr, "sdm["+c.who+"] ", log.LstdFlags|log.Lmicroseconds)
	if *f.debug > 0 {
		c.link.Log = os.Stderr
		c.trace = c.logger
	}
	return c, nil
}

// master is the master the flags describe.
func (f *serverFlags) master(c serverCommon) (master.Options, error) {
	o := master.Options{
		RoutingFile: *f.routingFile, Fanout: *f.fanout, Listener: c.inherited,
		Timeout: *f.timeout, Link: c.link, EventWindow: *f.window, Log: c.logger, Trace: c.trace,
	}
	if *f.generate != "" {
		o.Generate = strings.Split(*f.generate, ",")
	}
	switch {
	case *f.proxy == "stdio":
		o.Stdio = master.Stdio()
	case *f.proxy != "tcp":
		return o, exit.Usage(fmt.Errorf("--proxy=%s: want tcp or stdio", *f.proxy))
	case *f.host != "":
		o.Client = net.JoinHostPort(*f.host, strconv.Itoa(*f.port))
	default:
		o.ListenHost, o.ListenPort = *f.listen, *f.port
	}
	return o, nil
}

// rankServer is the rank server the flags describe.
func (f *serverFlags) rankServer(c serverCommon) (sdm.ServerOptions, error) {
	debuggerName, err := backend.ParseDebugger(*f.debugger)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	newBackend := backends[debuggerName]
	source, err := routing.ParseSource(*f.routesMode)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	compute, err := routes.Environ(source, *f.portBase)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	return sdm.ServerOptions{
		Index: c.index, RoutingFile: *f.routingFile, Fanout: *f.fanout, Listener: c.inherited,
		RoutesFrom: sdm.RoutesFrom{Publish: source == routing.SourcePublish, Compute: compute},
		NewBackend: func(bc backend.Config) (backend.Backend, error) {
			bc.Path = *f.debuggerPath
			return newBackend(bc)
		},
		Timeout: *f.timeout, Link: c.link, EventWindow: *f.window, Log: c.logger, Trace: c.trace,
	}, nil
}

// quietOnCancel turns the error of a server stopped by a signal into a clean
// exit: being told to stop is not a failure.
func quietOnCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
