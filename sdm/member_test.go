package sdm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/master"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// handingJob is a job of n servers on this host, each a Serve in this
// process, whose members hand their ranks to server 0 (sim backends): the
// front end's session, and each server's outcome once it ends.
type handingJob struct {
	session *client.Session
	cancel  map[int]context.CancelFunc
	ended   map[int]chan error
	adopted chan int // the ranks the leader made backends for
}

func startHandingJob(t *testing.T, n int, key byte) *handingJob {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "routes")
	entries := make([]routing.Entry, n)
	for i := range entries {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = routing.Entry{Index: i, Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}
		l.Close()
	}
	table, err := routing.NewTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	if err := routing.Write(file, table, nil); err != nil {
		t.Fatal(err)
	}
	cfg := wire.LinkConfig{Key: testKey(key)}
	ln, err := client.Listen("127.0.0.1:0", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	j := &handingJob{cancel: map[int]context.CancelFunc{}, ended: map[int]chan error{}, adopted: make(chan int, n)}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		for _, c := range j.cancel {
			c()
		}
		wg.Wait()
	})
	run := func(id int, serve func(context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ended := make(chan error, 1)
		j.cancel[id], j.ended[id] = cancel, ended
		wg.Add(1)
		go func() {
			defer wg.Done()
			ended <- serve(ctx)
		}()
	}
	run(n, func(ctx context.Context) error {
		return master.Run(ctx, master.Options{RoutingFile: file, Client: ln.Addr().String(), Timeout: 10 * time.Second, Link: cfg})
	})
	handover := &sdm.Handover{
		Adopt: func(c backend.Config, _ *wire.Member) (backend.Backend, error) {
			j.adopted <- c.Rank
			return sim.New(c), nil
		},
		Spawn: func() (member.Spawned, error) { return member.Spawned{}, errors.New("no process") },
	}
	for id := range n {
		run(id, func(ctx context.Context) error {
			return sdm.Serve(ctx, sdm.ServerOptions{Index: id, RoutingFile: file, Timeout: 10 * time.Second, Link: cfg,
				NewBackend: func(c backend.Config) (backend.Backend, error) { return sim.New(c), nil },
				Handover:   handover, Log: log.New(io.Discard, fmt.Sprintf("server %d: ", id), 0)})
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if j.session, err = ln.Accept(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.session.Close() })
	if err := j.session.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return j
}

// The servers of a host hand their ranks to its first, which answers for
// all of them; a member that ends is its rank lost, and the session's end
// lets every member go without an error.
func TestMembersHandTheirRanksOver(t *testing.T) {
	j := startHandingJob(t, 4, 21)
	var adopted wire.Builder
	for range 3 {
		adopted.Add(<-j.adopted)
	}
	if got := adopted.Set(); !got.Equal(wire.Range(1, 3)) {
		t.Fatalf("the leader made backends for %v, want 1-3", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := wire.MustEncode(wire.Start{Program: "hang"})
	if groups, err := j.session.Command(ctx, wire.All(4), wire.OpStart, start, 5*time.Second); err != nil || !testenv.OKRanks(groups).Equal(wire.All(4)) {
		t.Fatalf("start: %s %v", testenv.Describe(groups), err)
	}
	groups, err := j.session.Command(ctx, wire.All(4), wire.OpWhere, nil, 5*time.Second)
	if err != nil || len(groups) != 2 || !testenv.OKRanks(groups).Equal(wire.All(4)) {
		t.Fatalf("where: %s %v", testenv.Describe(groups), err)
	}
	j.cancel[2]()
	if err := <-j.ended[2]; err != nil {
		t.Errorf("member 2, stopped: %v", err)
	}
	for {
		ev, err := j.session.NextEvent(ctx)
		if err != nil {
			t.Fatalf("no loss of rank 2: %v", err)
		}
		if ev.Op == wire.EventLost {
			if !ev.Group.Ranks.Equal(wire.Single(2)) || !strings.Contains(string(ev.Group.Body), "server 2") {
				t.Fatalf("lost %v: %s", ev.Group.Ranks, ev.Group.Body)
			}
			break
		}
	}
	groups, err = j.session.Command(ctx, wire.All(4), wire.OpStatus, nil, 5*time.Second)
	if err != nil || !testenv.OKRanks(groups).Equal(wire.Range(0, 3).Minus(wire.Single(2))) || !strings.Contains(testenv.Describe(groups), "[2] lost") {
		t.Fatalf("status after rank 2's server ended: %s %v", testenv.Describe(groups), err)
	}
	if _, err := j.session.Quit(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{0, 1, 3, 4} {
		select {
		case err := <-j.ended[id]:
			if err != nil {
				t.Errorf("server %d after the session's end: %v", id, err)
			}
		case <-ctx.Done():
			t.Fatalf("server %d did not end with the session", id)
		}
	}
}

// A member ends with its leader: a leader that is stopped lets its
// members go as it lets its children go.
func TestMemberEndsWithItsLeader(t *testing.T) {
	j := startHandingJob(t, 2, 22)
	<-j.adopted
	j.cancel[0]()
	select {
	case err := <-j.ended[1]:
		if err != nil {
			t.Fatalf("member: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the member outlived its leader by 10s")
	}
}
