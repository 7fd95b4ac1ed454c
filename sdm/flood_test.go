package sdm_test

import (
	"context"
	"log"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/sdm"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Keyless peers on a tree port, more than wire.MaxPending silent ones and
// slow ones besides, keep no child out, and their refusals are told in a
// line or two with counts rather than a line each.
func TestTreePortFloodKeepsNoChildOut(t *testing.T) {
	const n = 6
	var mu sync.Mutex
	var lines []string
	told := make(chan struct{}, 1)
	logger := log.New(lineFunc(func(s string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, s)
		if strings.Contains(s, "tree port: dropped") {
			select {
			case told <- struct{}{}:
			default:
			}
		}
	}), "", 0)
	master := 0
	// The children dial once the flood is there: one that came before
	// it would be among the oldest, the first let go to make room.
	flooded := make(chan struct{})
	tt := launchTree(t, n, 2, func(c *sdm.Config) {
		if c.Index != c.Tree.Master() {
			dial := c.DialUp
			c.DialUp = func(ctx context.Context) (net.Conn, error) {
				<-flooded
				return dial(ctx)
			}
			return
		}
		master = c.Index
		c.Log = logger
		testenv.Flood(t, c.Listener.Addr().String(), wire.MaxPending+100, 20)
		close(flooded)
	}, func(id int) backend.Backend { return sim.New(backendConfig(id, n)) })
	if groups := tt.command(wire.All(n), wire.OpStatus, nil, 10*time.Second); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("status past the flood on node %d's port: %s", master, describe(groups))
	}
	// The 100 let go to make room for newer ones are refused at once.
	select {
	case <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("no refusal told within 10s though 100 peers were let go")
	}
	mu.Lock()
	defer mu.Unlock()
	if all := strings.Join(lines, ""); strings.Count(all, "tree port: dropped") > 2 {
		t.Errorf("a line each for the peers refused, want one or two with counts:\n%s", all)
	}
}
