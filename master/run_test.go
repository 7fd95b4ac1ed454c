package master

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

var key = wire.Key{9, 8, 7}

// servers starts n rank servers with simulated debuggers in this process,
// as --routes_from=file servers of a routing file written here, which it
// returns: the master's children find it through the master file it
// publishes.
func servers(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "routes")
	listeners := make([]net.Listener, n)
	entries := make([]routing.Entry, n)
	for id := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[id] = l
		entries[id] = routing.Entry{Index: id, Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}
	}
	table, err := routing.NewTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	if err := routing.Write(path, table, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, n)
	t.Cleanup(func() {
		cancel()
		for range n {
			select {
			case <-ended:
			case <-time.After(deadline):
				t.Error("a server did not stop")
				return
			}
		}
	})
	for id := range n {
		o := sdm.ServerOptions{Index: id, RoutingFile: path, Listener: listeners[id], Timeout: deadline, Link: wire.LinkConfig{Key: key},
			NewBackend: func(c backend.Config) (backend.Backend, error) { return sim.New(c), nil }}
		go func() { ended <- sdm.Serve(ctx, o) }()
	}
	return path
}

// run runs the master of o in the background; its end is sent on the
// channel returned.
func run(t *testing.T, o Options) chan error {
	t.Helper()
	o.Link, o.Timeout = wire.LinkConfig{Key: key}, deadline
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(deadline):
			t.Error("the master did not stop")
		}
	})
	return ended
}

// drive checks a session to a master from beginning to end: every rank
// joins, answers where, and quits, and the master's Run then returns nil.
func drive(t *testing.T, s *client.Session, n int, master chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	start := wire.MustEncode(wire.Start{Program: "hang"})
	if g, err := s.Command(ctx, wire.All(n), wire.OpStart, start, deadline); err != nil || !testenv.OKRanks(g).Equal(wire.All(n)) {
		t.Fatalf("start: %s %v", testenv.Describe(g), err)
	}
	g, err := s.Command(ctx, wire.All(n), wire.OpWhere, nil, deadline)
	if got, want := testenv.Describe(g), "[0-1] ok MPI_Recv; [2] ok compute; "; err != nil || got != want {
		t.Fatalf("where: %q %v, want %q", got, err, want)
	}
	if _, err := s.Quit(ctx, deadline); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-master:
		master <- err // for the cleanup
		if err != nil {
			t.Fatalf("the master after quit: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("the master did not end after quit")
	}
}

// A master on its standard input and output (--proxy=stdio) publishes
// its address, takes its children and serves the front end on the pipe.
func TestRunOverStdio(t *testing.T) {
	t.Setenv(routing.HostEnv, "127.0.0.1")
	const n = 3
	path := servers(t, n)
	front, stdio := net.Pipe()
	master := run(t, Options{RoutingFile: path, Stdio: stdio})
	s, err := client.Open(front, wire.LinkConfig{Key: key}, n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	drive(t, s, n, master)
}

// A master given the front end's session port (--host/--port) dials it.
func TestRunDialsFrontEnd(t *testing.T) {
	t.Setenv(routing.HostEnv, "127.0.0.1")
	const n = 3
	path := servers(t, n)
	ln, err := client.Listen("127.0.0.1:0", wire.LinkConfig{Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	master := run(t, Options{RoutingFile: path, Client: ln.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	s, err := ln.Accept(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	drive(t, s, n, master)
}

// A master whose routing file never comes gives up at its timeout,
// naming the file.
func TestRunWithoutRoutingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	front, stdio := net.Pipe()
	defer front.Close()
	err := Run(context.Background(), Options{RoutingFile: path, Stdio: stdio, Timeout: 200 * time.Millisecond,
		Link: wire.LinkConfig{Key: key}})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("no routing file: %v", err)
	}
}
