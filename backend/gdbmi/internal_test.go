package gdbmi_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// A gdb that meets an internal error ends, says so, and leaves no core
// file of itself behind.
func TestInternalErrorEndsGDB(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	dir := t.TempDir()
	t.Chdir(dir)
	g, err := gdbmi.Start("gdb")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g.Run(ctx, `-interpreter-exec console "maint internal-error testing"`)
	select {
	case <-g.Done():
	case <-ctx.Done():
		t.Fatal("gdb still runs 20s after its internal error")
	}
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "internal-error: testing") {
		t.Errorf("gdb ended with %v, not its internal error", err)
	}
	cores, _ := filepath.Glob(filepath.Join(dir, "core*"))
	if len(cores) > 0 {
		t.Errorf("gdb left %v", cores)
	}
}
