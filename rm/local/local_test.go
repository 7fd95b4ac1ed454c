package local

import (
	"errors"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/sdm-hpc/sdm/rm"
	"github.com/sdm-hpc/sdm/routing"
)

// The routing file and the master file name the ports that listen binds,
// the master's last.
func TestListenWritesWhatItBound(t *testing.T) {
	spec := rm.Spec{Dir: t.TempDir(), Size: 3}
	listeners, err := listen(spec)
	for _, ln := range listeners {
		defer ln.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	table, err := routing.ReadFile(spec.RoutingFile())
	if err != nil || table.Size() != 3 {
		t.Fatalf("routing file: %v, %v; want 3 servers", table, err)
	}
	master, err := routing.ReadMaster(spec.RoutingFile(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, ln := range listeners {
		e := master
		if i < 3 {
			e, _ = table.Lookup(i)
		}
		if port := ln.Addr().(*net.TCPAddr).Port; e.Host != "127.0.0.1" || e.Port != port {
			t.Errorf("server %d: the files say %s, it listens on port %d", i, e.Addr(), port)
		}
	}
}

// startAll starts every process once, the master among the first, and a
// worker stops at its first failure.
func TestStartAllStartsTheMasterFirst(t *testing.T) {
	var mu sync.Mutex
	var started []int
	launch := func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, i)
		return nil
	}
	if err := startAll(4, launch); err != nil {
		t.Fatal(err)
	}
	slices.Sort(started)
	if !slices.Equal(started, []int{0, 1, 2, 3, 4}) {
		t.Errorf("started %v, want 0-4 once each", started)
	}
	failed := errors.New("no such program")
	var tries []int
	err := startAll(4, func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, i)
		return failed
	})
	if !errors.Is(err, failed) || len(tries) != starters || !slices.Contains(tries, 4) {
		t.Errorf("startAll: %v after %v, want %v after the first of each worker, the master's among them", err, tries, failed)
	}
}
