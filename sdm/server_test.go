package sdm_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
