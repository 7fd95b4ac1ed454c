package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// A host whose own name resolves nowhere (a container, a node that
// SLURM names by a name of its own): the master publishes an address
// instead, and servers that the routing file names by that name reach
// their parents on the loopback. Every process runs with that host name.
func TestHostWithoutName(t *testing.T) {
	unshare := testenv.RequireTool(t, "unshare")
	if os.Geteuid() != 0 {
		t.Skip("a host name of its own (a UTS namespace) needs root")
	}
	const n, name = 4, "sdm-nowhere.invalid"
	s := newSession(t, n)
	table, err := routing.ReadFile(s.routes)
	if err != nil {
		t.Fatal(err)
	}
	for i := range table.Entries {
		table.Entries[i].Host = name
	}
	if err := routing.Write(s.routes, table, nil); err != nil {
		t.Fatal(err)
	}
	named := func(argv ...string) *exec.Cmd {
		return testenv.Command(t, unshare, append([]string{"--uts", "sh", "-c", `hostname ` + name + ` && exec "$@"`, "sh"}, argv...)...)
	}
	port := strconv.Itoa(s.ln.Addr().Port)
	start(t, named(sdmBin, "--master", "--host=127.0.0.1", "--port="+port, "--routing_file="+s.routes, "--key-file="+s.keyFile))
	for i := range n {
		start(t, named(append(s.serverArgs(), "--server="+strconv.Itoa(i))...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.join(ctx, n)
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
