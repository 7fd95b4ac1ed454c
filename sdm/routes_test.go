package sdm

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/routing"
)

func twoOnLoopback() (*routing.Table, error) {
	return routing.NewTable([]routing.Entry{{Index: 0, Host: "127.0.0.1", Port: 4000}, {Index: 1, Host: "127.0.0.1", Port: 4001}})
}

// A computed table is written as the routing file by server 0 only, for
// the master; the others just use it.
func TestRoutesComputedWrittenByServerZero(t *testing.T) {
	for _, index := range []int{1, 0} {
		file := filepath.Join(t.TempDir(), "routes")
		routes, ln, err := RoutesFrom{Compute: twoOnLoopback}.open(index, file, nil)
		if err != nil || ln != nil {
			t.Fatalf("open: %v %v", ln, err)
		}
		table, err := routes(context.Background())
		if err != nil || table.Size() != 2 {
			t.Fatalf("server %d: %v %v", index, table, err)
		}
		_, err = os.Stat(file)
		if written := err == nil; written != (index == 0) {
			t.Errorf("server %d: routing file written %v, want %v", index, written, index == 0)
		}
	}
}

// A publishing server binds a port of its own and publishes it; its wait
// ends with the file the front end collects.
func TestRoutesPublishBindsAndPublishes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	routes, ln, err := RoutesFrom{Publish: true}.open(0, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := routing.Collect(ctx, file, 1); err != nil {
		t.Fatal(err)
	}
	table, err := routes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := table.Entries[0].Port, ln.Addr().(*net.TCPAddr).Port; got != want {
		t.Fatalf("published port %d, bound %d", got, want)
	}
}

// PTP's way keeps the inherited listener and waits for the file.
func TestRoutesFileWaits(t *testing.T) {
	inherited, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inherited.Close()
	file := filepath.Join(t.TempDir(), "routes")
	routes, ln, err := RoutesFrom{}.open(0, file, inherited)
	if err != nil || ln != inherited {
		t.Fatalf("open: %v %v", ln, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := routes(ctx); err == nil {
		t.Fatal("a routing file that never came was read")
	}
}
