package master_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/master"
)

// The master's error names it once, whichever step failed.
func TestRunErrorNamesTheMasterOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "no such directory", "routes")
	err := master.Run(context.Background(), master.Options{
		RoutingFile: file, Generate: []string{"localhost"}, ListenPort: 0, Timeout: 5 * time.Second,
	})
	if err == nil {
		t.Fatal("a master whose master file cannot be written ran")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "master: ") || strings.HasPrefix(msg, "master: master") {
		t.Errorf("error %q: want it to begin with master: once", msg)
	}
}
