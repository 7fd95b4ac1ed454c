package main

import (
	"context"
	"errors"
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
	"github.com/sdm-hpc/sdm/master"
	"github.com/sdm-hpc/sdm/rm/local"
	"github.com/sdm-hpc/sdm/rm/pe"
	"github.com/sdm-hpc/sdm/rm/slurm"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/wire"
)

// backends maps each debugger to its constructor.
var backends = map[backend.Debugger]func(backend.Config) (backend.Backend, error){
	backend.GDB: func(c backend.Config) (backend.Backend, error) { return gdbmi.New(c), nil },
	backend.Sim: func(c backend.Config) (backend.Backend, error) { return sim.New(c), nil },
}

func runServer(args []string) error {
	fs := pflag.NewFlagSet("sdm", pflag.ContinueOnError)
	debugger := fs.String("debugger", "gdb-mi", "debugger backend: gdb-mi or sim (simulated program, for tests and scale runs)")
	debuggerPath := fs.String("debugger_path", "", "path of the debugger executable (default: found in $PATH)")
	proxy := fs.String("proxy", "tcp", "master's link to the front end: tcp, or stdio (standard input and output)")
	host := fs.String("host", "", "master: the front end's host, which the master dials; without it the master listens on --listen and --port")
	listen := fs.String("listen", "127.0.0.1", "master without --host: the address its session port binds (0.0.0.0 for every interface, for a front end on another host)")
	port := fs.Int("port", 12345, "master: the front end's session port")
	isMaster := fs.Bool("master", false, "run as the master, the root of the tree")
	server := fs.Int("server", -1, "this server's index (default: from the environment)")
	generate := fs.String("generate_routes", "", "master: write the routing file for servers on these comma-separated hosts (servers then need --server=ID)")
	routingFile := fs.String("routing_file", "routing_file", "the routing file shared by the job")
	debug := fs.Int("debug", 0, "log more to standard error (--debug or --debug=LEVEL)")
	fs.Lookup("debug").NoOptDefVal = "1"
	keyFile := fs.String("key-file", "", "file holding the session key (mode 0600), instead of $"+wire.KeyEnv)
	fanout := fs.Int("fanout", 0, "tree shape: 0 for PTP's binomial tree, K >= 2 for a K-ary tree; the same for every server")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for the routing file, the parent and the front end")
	window := fs.Duration("event_window", sdm.DefaultEventWindow, "how long a node holds events to merge them with other ranks'")
	routesMode := fs.String("routes_from", "file", "how a server finds the routing table: file (wait for --routing_file), publish (bind any port, publish it, wait for the file the front end writes), slurm or pe (compute it from the launcher's variables)")
	portBase := fs.Int("port_base", 0, "with --routes_from=slurm or pe: the port of each node's first server (the next ones count up)")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, helpText(serverUsage, fs))
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return &exitError{2, err}
	}
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("unexpected argument %q (servers take flags only; see sdm --help)", fs.Arg(0))}
	}
	if err := sdm.DropKeyFromEnviron(); err != nil {
		return err
	}
	lookup, err := sdm.HandedKey()
	if err != nil {
		return err
	}
	key, err := wire.LoadKey(*keyFile, lookup)
	if err != nil {
		return err
	}
	// The debugged program inherits our environment: the socket and the
	// scheduler setting of the launcher are ours alone.
	if os.Getenv(local.GOMAXPROCSEnv) != "" {
		os.Unsetenv("GOMAXPROCS")
		os.Unsetenv(local.GOMAXPROCSEnv)
	}
	inherited, err := local.InheritedListener()
	if err != nil {
		return err
	}

	who := "master"
	index := -1
	if !*isMaster {
		i, source, err := routing.Index(*server, nil)
		if err != nil {
			return err
		}
		index, who = i, fmt.Sprintf("rank %d", i)
		if *debug > 0 {
			fmt.Fprintf(os.Stderr, "sdm[%s]: index from %s\n", who, source)
		}
	}
	logger := log.New(os.Stderr, "sdm["+who+"] ", log.LstdFlags|log.Lmicroseconds)
	link := wire.LinkConfig{Key: key}
	var trace *log.Logger
	if *debug > 0 {
		link.Log = os.Stderr
		trace = logger
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()

	if *isMaster {
		o := master.Options{
			RoutingFile: *routingFile, Fanout: *fanout, Listener: inherited,
			Timeout: *timeout, Link: link, EventWindow: *window, Log: logger, Trace: trace,
		}
		if *generate != "" {
			o.Generate = strings.Split(*generate, ",")
		}
		switch {
		case *proxy == "stdio":
			o.Stdio = master.Stdio()
		case *proxy != "tcp":
			return &exitError{2, fmt.Errorf("--proxy=%s: want tcp or stdio", *proxy)}
		case *host != "":
			o.Client = net.JoinHostPort(*host, strconv.Itoa(*port))
		default:
			o.ListenHost, o.ListenPort = *listen, *port
		}
		return quietOnCancel(ctx, prefixed(who, master.Run(ctx, o)))
	}

	debuggerName, err := backend.ParseDebugger(*debugger)
	if err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	newBackend := backends[debuggerName]
	source, err := routing.ParseSource(*routesMode)
	if err != nil {
		return prefixed(who, err)
	}
	routes, err := routesFrom(source, *portBase)
	if err != nil {
		return prefixed(who, err)
	}
	err = sdm.Serve(ctx, sdm.ServerOptions{
		Index: index, RoutingFile: *routingFile, RoutesFrom: routes, Fanout: *fanout, Listener: inherited,
		NewBackend: func(c backend.Config) (backend.Backend, error) {
			c.Path = *debuggerPath
			return newBackend(c)
		},
		Timeout: *timeout, Link: link, EventWindow: *window, Log: logger, Trace: trace,
	})
	return quietOnCancel(ctx, prefixed(who, err))
}

// routesFrom is how a server finds its routing table, from --routes_from
// and --port_base.
func routesFrom(source routing.Source, portBase int) (sdm.RoutesFrom, error) {
	switch source {
	case routing.SourcePublish:
		return sdm.RoutesFrom{Publish: true}, nil
	case routing.SourceSLURM, routing.SourcePE:
		if portBase < 1 || portBase > 65535 {
			return sdm.RoutesFrom{}, fmt.Errorf("--routes_from=%s needs --port_base", source)
		}
		compute := func() (*routing.Table, error) { return slurm.Routes(os.LookupEnv, portBase) }
		if source == routing.SourcePE {
			dir, _ := os.Getwd()
			compute = func() (*routing.Table, error) { return pe.Routes(os.LookupEnv, dir, portBase) }
		}
		return sdm.RoutesFrom{Compute: compute}, nil
	}
	return sdm.RoutesFrom{}, nil // routing.SourceFile
}

// prefixed names the server in its error, since many write to one terminal.
func prefixed(who string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), who) {
		return err
	}
	return fmt.Errorf("%s: %w", who, err)
}

// quietOnCancel turns the error of a server stopped by a signal into a clean
// exit: being told to stop is not a failure.
func quietOnCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
