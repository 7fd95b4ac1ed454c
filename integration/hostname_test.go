package integration

import (
	"context"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/internal/testenv"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// A master on a host whose own name resolves nowhere (a container, say)
// publishes an address instead, and its children reach it.
func TestMasterOnHostWithoutName(t *testing.T) {
	unshare := testenv.RequireTool(t, "unshare")
	if os.Geteuid() != 0 {
		t.Skip("a host name of its own (a UTS namespace) needs root")
	}
	const n = 2
	s := newSession(t, n)
	port := strconv.Itoa(s.ln.Addr().Port)
	start(t, testenv.Command(t, unshare, "--uts", "sh", "-c", `hostname sdm-nowhere.invalid && exec "$@"`, "sh",
		sdmBin, "--master", "--host=127.0.0.1", "--port="+port, "--routing_file="+s.routes, "--key-file="+s.keyFile))
	for i := range n {
		s.startServer(s.serverArgs(), i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := s.ln.Accept(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	entry, err := routing.ReadMaster(s.routes, n)
	if err != nil {
		t.Fatal(err)
	}
	if net.ParseIP(entry.Host) == nil {
		t.Errorf("the master published %q, a name, although its host's name resolves nowhere", entry.Host)
	}
	if groups, err := cs.Quit(ctx, 10*time.Second); err != nil || !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("quit: %s %v", describe(groups), err)
	}
}
