package integration

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// handStarted runs a master that listens for its front end on the
// loopback (no --host), with n simulated servers, and returns the address
// to dial once it listens.
func handStarted(t testing.TB, n int) (*session, string, *proc) {
	t.Helper()
	s := newSession(t, n)
	port := freePort(t)
	master := start(t, testenv.Command(t, sdmBin, "--master", "--port="+strconv.Itoa(port),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	args := append([]string{}, s.serverArgs()[1:]...)
	for i := range n {
		start(t, testenv.Command(t, sdmBin, append(args, "--server="+strconv.Itoa(i))...))
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		// The master may not listen yet: wait until it does.
		c, err := new(net.Dialer).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return s, addr, master
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the master does not listen on %s: %v", addr, err)
		case <-master.done:
			t.Fatalf("the master ended: %v\n%s", master.err, master.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// No number of keyless peers, silent or slow, keeps the owner out of a
// hand-started master: handshakes proceed side by side, so the owner's
// takes its own round trips and not the others' deadlines (5 s each,
// where one at a time let 20 silent peers keep it out for 100 s). Their
// refusals are told in a few lines with counts, not a line each.
func TestKeylessFloodDoesNotLockOutTheOwner(t *testing.T) {
	const n = 4
	s, addr, master := handStarted(t, n)
	testenv.Flood(t, addr, 2000, 200)
	// Well within one handshake's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cs, err := client.Dial(ctx, addr, s.link, n)
	if err != nil {
		t.Fatalf("the owner did not get through 2,000 silent and 200 slow peers: %v\n%s", err, master.out.String())
	}
	defer cs.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cs.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if groups := command(t, cs.Command, wire.All(n), wire.OpStatus, nil); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("status: %s", describe(groups))
	}
	if lines := strings.Count(master.out.String(), "session port: dropped"); lines > 3 {
		t.Errorf("%d lines for the dropped peers, want a few with counts:\n%s", lines, master.out.String())
	}
}
