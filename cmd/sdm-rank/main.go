// A member's GOMAXPROCS comes from its launcher, and is not revisited:
// the runtime then neither reads the cgroup files at start nor wakes to
// look again.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command sdm-rank is the lean start of a rank server, for launchers that
// start one per rank: `mpirun -np N sdm-rank [sdm-server's flags]`. Most
// of a host's servers only hand their rank to the host's first server
// (--members=hand) and start a gdb when asked; sdm-rank does just that, linking neither
// flags nor a network stack, so that each starts at about the cost of a
// Go program that does nothing; built with cgo, less still: its start in C
// (early.c) joins and waits before the Go runtime starts, which it does
// only when the leader asks for a gdb. Every other start (the host's first
// server, the master, --members=serve, --tree=ranks, a key in
// the environment, a routing file not written yet, --help, a flag it does
// not read) it leaves to sdm-server beside it, which it executes in its
// place with the same arguments and environment.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/sdm-hpc/sdm/internal/handover/vars"
	"github.com/sdm-hpc/sdm/internal/resident"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/secret"
)

func main() {
	// Made before the routing file is read, the trimmer counts what
	// reading it leaves.
	trimmer := resident.NewTrimmer(resident.Quiet, resident.Garbage, nil)
	p, why := decide(os.Args[1:], os.LookupEnv)
	var l *member.Leader
	if fd, ok := early(); ok {
		if why != "" {
			fail("rank " + strconv.Itoa(p.index) + ": joined server " + strconv.Itoa(p.leader) + " before Go started, yet this is no member's start: " + why)
		}
		l = member.Joined(fd, p.leader)
	} else if why != "" {
		full(why)
	}
	if err := serve(p, trimmer, l); err != nil {
		os.Stderr.WriteString("sdm-rank: rank " + strconv.Itoa(p.index) + ": " + err.Error() + "\n")
		os.Exit(1)
	}
}

// serve hands the rank over, unless the start in C did (l, else nil),
// and serves the leader until the session, or a signal, ends it.
func serve(p plan, trimmer *resident.Trimmer, l *member.Leader) error {
	// The listening socket a launcher bound for the server, and its
	// GOMAXPROCS, are the server's, not the program's; the start in C
	// closed the socket if it joined.
	if p.listener >= 0 {
		if l == nil {
			syscall.Close(p.listener)
		}
		os.Unsetenv(vars.ListenFD)
	}
	if os.Getenv(vars.GOMAXPROCS) != "" {
		os.Unsetenv("GOMAXPROCS")
		os.Unsetenv(vars.GOMAXPROCS)
	}
	if l == nil {
		var err error
		if l, err = join(p); err != nil {
			return err
		}
	}
	// Its one piece of work, which ends its start: a host's servers keep
	// mapped only what waiting uses.
	trimmer.Busy()
	ctx, end := context.WithCancel(context.Background())
	defer end()
	spawn := func() (member.Spawned, error) {
		return member.Spawned{}, errors.New("the simulated debugger has no process")
	}
	if !p.sim {
		s := &member.Spawner{Path: p.debuggerPath}
		defer s.Stop()
		var watch sync.Once
		spawn = func() (member.Spawned, error) {
			// A signal ends a member that started no gdb as it would any
			// process; one that did ends its gdbs first. Watching
			// signals costs a thread, a quarter of a member's start:
			// it waits for the first gdb.
			watch.Do(func() {
				signals := make(chan os.Signal, 1)
				signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
				go func() {
					<-signals
					end()
				}()
			})
			return s.Spawn()
		}
	}
	return l.Serve(ctx, spawn)
}

// join hands the rank to the leader.
func join(p plan) (*member.Leader, error) {
	key, err := secret.ReadFile(p.keyFile)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	return member.Join(ctx, key, p.leader, p.index, p.servers, member.JoinTimeout)
}

// full executes sdm-server beside this executable in this process's
// place: the start is one that sdm-rank does not make (why).
func full(why string) {
	self, err := os.Executable()
	if err != nil {
		fail("cannot find sdm-server: " + err.Error())
	}
	path := filepath.Join(filepath.Dir(self), "sdm-server")
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ())
	fail("cannot execute " + path + " (" + why + "): " + err.Error())
}

func fail(msg string) {
	os.Stderr.WriteString("sdm-rank: " + msg + "\n")
	os.Exit(1)
}
