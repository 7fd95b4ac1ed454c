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

// serverFlags are the flags of a rank server and of the master; those
// they share go straight into the master's options.
type serverFlags struct {
	master.Options
	debugger, debuggerPath, proxy, host, generate, keyFile, routesMode string
	port, server, debug, portBase                                      int
	isMaster                                                           bool
}

func newServerFlags(fs *pflag.FlagSet) *serverFlags {
	f := &serverFlags{}
	fs.StringVar(&f.debugger, "debugger", "gdb-mi", "debugger backend: gdb-mi or sim (simulated program, for tests and scale runs)")
	fs.StringVar(&f.debuggerPath, "debugger_path", "", "path of the debugger executable (default: found in $PATH)")
	fs.StringVar(&f.proxy, "proxy", "tcp", "master's link to the front end: tcp, or stdio (standard input and output)")
	fs.StringVar(&f.host, "host", "", "master: the front end's host, which the master dials; without it the master listens on --listen and --port")
	fs.StringVar(&f.ListenHost, "listen", "127.0.0.1", "master without --host: the address its session port binds (0.0.0.0 for every interface, for a front end on another host)")
	fs.IntVar(&f.port, "port", 12345, "master: the front end's session port")
	fs.BoolVar(&f.isMaster, "master", false, "run as the master, the root of the tree")
	fs.IntVar(&f.server, "server", -1, "this server's index (default: from the environment)")
	fs.StringVar(&f.generate, "generate_routes", "", "master: write the routing file for servers on these comma-separated hosts (servers then need --server=ID)")
	fs.StringVar(&f.RoutingFile, "routing_file", "routing_file", "the routing file shared by the job")
	fs.IntVar(&f.debug, "debug", 0, "log more to standard error (--debug or --debug=LEVEL)")
	fs.StringVar(&f.keyFile, "key-file", "", "file holding the session key (mode 0600), instead of $"+wire.KeyEnv)
	fs.IntVar(&f.Fanout, "fanout", 0, "tree shape: 0 for PTP's binomial tree, K >= 2 for a K-ary tree; the same for every server")
	fs.DurationVar(&f.Timeout, "timeout", 60*time.Second, "how long to wait for the routing file, the parent and the front end")
	fs.DurationVar(&f.EventWindow, "event_window", sdm.DefaultEventWindow, "how long a node holds events to merge them with other ranks'")
	fs.StringVar(&f.routesMode, "routes_from", "file", "how a server finds the routing table: file (wait for --routing_file), publish (bind any port, publish it, wait for the file the front end writes), slurm or pe (compute it from the launcher's variables)")
	fs.IntVar(&f.portBase, "port_base", 0, "with --routes_from=slurm or pe: the port of each node's first server (the next ones count up)")
	fs.Lookup("debug").NoOptDefVal = "1"
	return f
}

func runServer(args []string) error {
	fs := pflag.NewFlagSet("sdm", pflag.ContinueOnError)
	f := newServerFlags(fs)
	if help, err := parseFlags(fs, args, helpFile("server")); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("unexpected argument %q (servers take flags only; see sdm --help)", fs.Arg(0)))
	}
	index, err := f.common()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if f.isMaster {
		if err := f.master(); err != nil {
			return err
		}
		return exit.Quiet(ctx, master.Run(ctx, f.Options))
	}
	o, err := f.rankServer(index)
	if err != nil {
		return fmt.Errorf("rank %d: %w", index, err)
	}
	return exit.Quiet(ctx, sdm.Serve(ctx, o))
}

// common takes what the server was handed (handover.Take) and its index
// (-1 for the master), and readies the logs.
func (f *serverFlags) common() (index int, err error) {
	h, err := handover.Take(f.keyFile)
	if err != nil {
		return -1, err
	}
	f.Listener, f.Link = h.Listener, wire.LinkConfig{Key: h.Key}
	index, who := -1, "master"
	if !f.isMaster {
		i, source, err := routing.Index(f.server, nil)
		if err != nil {
			return -1, err
		}
		index, who = i, fmt.Sprintf("rank %d", i)
		if f.debug > 0 {
			fmt.Fprintf(os.Stderr, "sdm[%s]: index from %s\n", who, source)
		}
	}
	f.Log = log.New(os.Stderr, "sdm["+who+"] ", log.LstdFlags|log.Lmicroseconds)
	if f.debug > 0 {
		f.Link.Log, f.Trace = os.Stderr, f.Log
	}
	return index, nil
}

// master completes the master's options: its routes and how it reaches
// the front end.
func (f *serverFlags) master() error {
	if f.generate != "" {
		f.Generate = strings.Split(f.generate, ",")
	}
	switch {
	case f.proxy == "stdio":
		f.Stdio = master.Stdio()
	case f.proxy != "tcp":
		return exit.Usage(fmt.Errorf("--proxy=%s: want tcp or stdio", f.proxy))
	case f.host != "":
		f.Client = net.JoinHostPort(f.host, strconv.Itoa(f.port))
	default:
		f.ListenPort = f.port
	}
	return nil
}

// rankServer is the rank server the flags describe.
func (f *serverFlags) rankServer(index int) (sdm.ServerOptions, error) {
	debuggerName, err := backend.ParseDebugger(f.debugger)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	newBackend := backends[debuggerName]
	source, err := routing.ParseSource(f.routesMode)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	compute, err := routes.Environ(source, f.portBase)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	return sdm.ServerOptions{
		Index: index, RoutingFile: f.RoutingFile, Fanout: f.Fanout, Listener: f.Listener,
		RoutesFrom: sdm.RoutesFrom{Publish: source == routing.SourcePublish, Compute: compute},
		NewBackend: func(bc backend.Config) (backend.Backend, error) {
			bc.Path = f.debuggerPath
			return newBackend(bc)
		},
		Timeout: f.Timeout, Link: f.Link, EventWindow: f.EventWindow, Log: f.Log, Trace: f.Trace,
	}, nil
}
