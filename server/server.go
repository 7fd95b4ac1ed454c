// Package server runs a server process as a launcher starts it, with
// PTP's flags: the master at the root of the tree, or the rank server
// beside one rank. It takes what the process was handed
// (internal/handover), finds the rank's index, names the process in its
// logs, and runs master.Run or sdm.Serve with the backend its debugger
// names and the routing table found as its routes source says.
//
// What enters: a Config (the flags), the environment and inherited
// descriptors. What leaves: the server's error, nil when a signal
// (SIGTERM, SIGINT, SIGHUP) stopped it.
package server

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/backend/lazy"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/internal/handover"
	"github.com/sdm-hpc/sdm/internal/resident"
	"github.com/sdm-hpc/sdm/master"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/rm/routes"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/stackwalk"
	"github.com/sdm-hpc/sdm/wire"
)

// Config is a server as its flags describe it. The master's options hold
// what a rank server shares with it: the routing file, the tree's fanout,
// the timeout, the event window.
type Config struct {
	master.Options
	Master       bool   // the master, else a rank server
	Index        int    // a rank server's index; -1: from the environment (routing.Index)
	KeyFile      string // the session key's file; "": the environment's key
	Debug        int    // > 0: trace links and the node to standard error
	Debugger     string // gdb-mi or sim
	DebuggerPath string // the debugger's executable ("": from $PATH)
	GDB          string // with gdb-mi: when gdb starts, eager or lazy (backend.GDBStart)
	// Prepare is the program the job will run, whose modules a lazy
	// server reads ahead from its start (stackwalk.Sampler.Prepare).
	Prepare string
	// Members is hand (a host's servers hand their ranks to its first
	// server, which serves them; each starts its rank's gdb when asked)
	// or serve (each serves its own rank, linked to the first).
	Members string
	// RanksPerGDB is how many of a host's ranks share a gdb, when the
	// host's first server debugs them all (Members hand).
	RanksPerGDB int
	RoutesFrom  string // file, publish, slurm or pe (routing.Source)
	PortBase    int    // with slurm or pe: the port of each node's first server
	// The master's link to the front end: Proxy stdio, or tcp: dial
	// Host:Port when Host is set, else listen on ListenHost:Port.
	Proxy, Host string
	Port        int
	// GenerateRoutes has the master write the routing file for servers on
	// these comma-separated hosts.
	GenerateRoutes string

	spawner *member.Spawner // the gdbs a member started for its leader
	pool    *gdbmi.Pool     // the gdbs a leader's ranks share (RanksPerGDB)
}

// backends maps each debugger to its constructor.
var backends = map[backend.Debugger]func(backend.Config) (backend.Backend, error){
	backend.GDB: func(c backend.Config) (backend.Backend, error) { return gdbmi.New(c), nil },
	backend.Sim: func(c backend.Config) (backend.Backend, error) { return sim.New(c), nil },
}

// Run runs the server c describes until it ends or a signal stops it.
// It takes what the process was handed first: a server given its key in
// the environment executes itself again without it (handover.Take).
func Run(c Config) error {
	index, err := c.common()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if c.Master {
		if err := c.master(); err != nil {
			return err
		}
		return exit.Quiet(ctx, master.Run(ctx, c.Options))
	}
	o, err := c.rankServer(index)
	if err != nil {
		return fmt.Errorf("%s: %w", sdm.ServerOptions{Index: index, Layout: c.Layout}.Name(), err)
	}
	if c.spawner != nil {
		defer c.spawner.Stop()
	}
	return exit.Quiet(ctx, sdm.Serve(ctx, o))
}

// common takes what the server was handed and its index (-1 for the
// master), and readies the logs.
func (c *Config) common() (index int, err error) {
	h, err := handover.Take(c.KeyFile)
	if err != nil {
		return -1, err
	}
	c.Listener, c.Link = h.Listener, wire.LinkConfig{Key: h.Key}
	index, who := -1, "master"
	if !c.Master {
		i, source, err := routing.Index(c.Index, nil)
		if err != nil {
			return -1, err
		}
		index, who = i, sdm.ServerOptions{Index: i, Layout: c.Layout}.Name()
		if c.Debug > 0 {
			fmt.Fprintf(os.Stderr, "sdm[%s]: index from %s\n", who, source)
		}
	}
	c.Log = log.New(os.Stderr, "sdm["+who+"] ", log.LstdFlags|log.Lmicroseconds)
	if c.Debug > 0 {
		c.Link.Log, c.Trace = os.Stderr, c.Log
	}
	return index, nil
}

// master completes the master's options: its routes and how it reaches
// the front end. A proxy other than tcp or stdio is a usage error.
func (c *Config) master() error {
	if c.GenerateRoutes != "" {
		c.Generate = strings.Split(c.GenerateRoutes, ",")
	}
	switch {
	case c.Proxy == "stdio":
		c.Stdio = master.Stdio()
	case c.Proxy != "tcp":
		return exit.Usage(fmt.Errorf("--proxy=%s: want tcp or stdio", c.Proxy))
	case c.Host != "":
		c.Client = net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	default:
		c.ListenPort = c.Port
	}
	return nil
}

// rankServer is the rank server c describes.
func (c *Config) rankServer(index int) (sdm.ServerOptions, error) {
	debugger, err := backend.ParseDebugger(c.Debugger)
	if err != nil {
		return sdm.ServerOptions{}, exit.Usage(err)
	}
	newBackend, lazily := backends[debugger], false
	var sampler *stackwalk.Sampler
	if debugger == backend.GDB {
		start, err := backend.ParseGDBStart(c.GDB)
		if err != nil {
			return sdm.ServerOptions{}, exit.Usage(err)
		}
		if lazily = start == backend.Lazy; lazily {
			// One sampler per server: its module cache serves every
			// process the server samples.
			sampler = stackwalk.NewSampler()
			if c.Prepare != "" {
				// The host's first server to claim it reads the program's
				// modules while the tree comes up and the job starts.
				sampler.Prepare(c.Prepare, nil)
			}
			newBackend = func(c backend.Config) (backend.Backend, error) { return lazy.New(c, sampler, nil, nil), nil }
		}
	}
	if c.RanksPerGDB < 0 {
		return sdm.ServerOptions{}, exit.Usage(fmt.Errorf("--ranks-per-gdb=%d: want 1 or more", c.RanksPerGDB))
	}
	handover, err := c.handover(debugger, sampler)
	if err != nil {
		return sdm.ServerOptions{}, exit.Usage(err)
	}
	// A server that debugs several ranks, its host's (handed over or
	// laid out), shares gdbs between them.
	if debugger == backend.GDB && c.ranksPerGDB() > 1 && (handover != nil || c.Layout != nil) {
		c.pool = &gdbmi.Pool{PerGDB: c.ranksPerGDB(), Wrapper: wrapper(), Start: func(context.Context) (*gdbmi.GDB, error) { return gdbmi.Start(c.DebuggerPath) }}
		newBackend = func(bc backend.Config) (backend.Backend, error) {
			shared := gdbmi.NewShared(bc, c.pool, c.ownShare())
			if lazily {
				return lazy.New(bc, sampler, shared, nil), nil
			}
			return shared, nil
		}
	}
	source, err := routing.ParseSource(c.RoutesFrom)
	if err != nil {
		return sdm.ServerOptions{}, exit.Usage(err)
	}
	compute, err := routes.Environ(source, c.PortBase)
	if err != nil {
		return sdm.ServerOptions{}, err
	}
	// Made before the routing file is read, the trimmer counts what
	// reading it leaves.
	trimmer := resident.NewTrimmer(resident.Quiet, resident.Garbage, func(err error) { c.Log.Printf("%v", err) })
	return sdm.ServerOptions{
		Index: index, RoutingFile: c.RoutingFile, Fanout: c.Fanout, RankTree: c.RankTree, Layout: c.Layout, Listener: c.Listener,
		RoutesFrom: sdm.RoutesFrom{Publish: source == routing.SourcePublish, Compute: compute},
		NewBackend: func(bc backend.Config) (backend.Backend, error) {
			bc.Path = c.DebuggerPath
			return newBackend(bc)
		},
		Timeout: c.Timeout, Link: c.Link, EventWindow: c.EventWindow, Log: c.Log, Trace: c.Trace,
		// A host's hundred servers share the pages of one executable, but
		// each one's RSS counts those it mapped, and resource managers add
		// up RSS: once a server has answered a command and been quiet, it
		// keeps mapped only what it uses from then on, and it gives back
		// what its commands, or a large start, left behind.
		AfterAnswer: trimmer.Busy, Joined: trimmer.Started, Handover: handover,
	}, nil
}

// handover is how the servers of a host hand their ranks to its first
// one, when they do (routing.Hands): nil when not. sampler, when gdb
// starts lazily, samples the stacks of every rank the first server
// adopts, whose programs it starts itself as the members would
// (lazy.Origin).
func (c *Config) handover(debugger backend.Debugger, sampler *stackwalk.Sampler) (*sdm.Handover, error) {
	hands, err := routing.Hands(c.Members, c.RankTree, c.Layout != nil)
	if err != nil || !hands {
		return nil, err
	}
	if debugger == backend.Sim {
		return &sdm.Handover{
			Adopt: func(bc backend.Config, _ *wire.Member) (backend.Backend, error) { return sim.New(bc), nil },
			Spawn: func() (member.Spawned, error) {
				return member.Spawned{}, errors.New("the simulated debugger has no process")
			},
		}, nil
	}
	c.spawner = &member.Spawner{Path: c.DebuggerPath}
	var sampleAll sync.Once
	adopt := func(bc backend.Config, m *wire.Member) (backend.Backend, error) {
		bc.Path = c.DebuggerPath
		var gdb *gdbmi.Backend
		if c.ranksPerGDB() > 1 {
			gdb = c.share(bc, m) // on c.pool
		} else {
			gdb = gdbmi.NewSpawned(bc, m.Spawn)
		}
		if sampler == nil {
			return gdb, nil
		}
		sampleAll.Do(takeProcessors)
		return lazy.New(bc, sampler, gdb, c.origin(m)), nil
	}
	return &sdm.Handover{Adopt: adopt, Spawn: c.spawner.Spawn}, nil
}

// takeProcessors lets the Go runtime use every processor the server may
// run on, which a launcher may have cut to one (GOMAXPROCS, for a server
// of one rank that mostly waits): a server that samples its host's ranks
// samples them all at once.
func takeProcessors() {
	if n := runtime.NumCPU(); runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
	}
}
