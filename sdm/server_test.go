package sdm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
)

// A server's error names its rank once, however deep the cause.
func TestServeErrorNamesTheRankOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	table, err := routing.NewTable([]routing.Entry{{Index: 0, Host: "127.0.0.1", Port: 1}, {Index: 1, Host: "127.0.0.1", Port: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := routing.Write(file, table, nil); err != nil {
		t.Fatal(err)
	}
	err = sdm.Serve(context.Background(), sdm.ServerOptions{Index: 5, RoutingFile: file, Timeout: 5 * time.Second})
	if err == nil {
		t.Fatal("rank 5 of a table of 2 served")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "rank 5: ") || strings.Count(msg, "rank 5") != 1 || !strings.Contains(msg, "only ranks 0-1") {
		t.Errorf("error %q: want it to begin with rank 5 once and say which ranks the file has", msg)
	}
}

// A parent whose host does not resolve is refused at once, by the line of
// its entry in the routing file.
func TestUnresolvableParentNamesItsLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	// Server 2's parent is server 0 in the binomial tree of four.
	if err := os.WriteFile(file, []byte("4\n1 127.0.0.1 2\n2 127.0.0.1 3\n0 no-such-host.invalid 1\n3 127.0.0.1 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := sdm.Serve(context.Background(), sdm.ServerOptions{Index: 2, RoutingFile: file, Timeout: 30 * time.Second, RankTree: true,
		NewBackend: func(backend.Config) (backend.Backend, error) { t.Fatal("a backend was made"); return nil, nil }})
	want := file + `:4: server 0's host "no-such-host.invalid" does not resolve`
	if err == nil || !strings.Contains(err.Error(), want) || time.Since(start) > 10*time.Second {
		t.Errorf("after %v: %v; want %q at once", time.Since(start), err, want)
	}
}
