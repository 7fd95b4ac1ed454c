package gdbmi_test

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/internal/debugregs"
	"github.com/sdm-hpc/sdm/wire"
)

// The package's tests run their ranks on gdbs of their own, or, with
// SDM_TEST_RANKS_PER_GDB=K (K > 1), on shares of gdbs of K ranks each:
// the ranks of a test, and of the tests before it, share a gdb, as a
// host's ranks do.
var sharedPool = func() *gdbmi.Pool {
	k, _ := strconv.Atoi(os.Getenv("SDM_TEST_RANKS_PER_GDB"))
	if k < 2 {
		return nil
	}
	return &gdbmi.Pool{PerGDB: k, Start: func(context.Context) (*gdbmi.GDB, error) { return gdbmi.Start("gdb") }}
}()

// newBackend is a rank's backend, on a gdb of its own or a share of one
// (sharedPool); a test that names a gdb gets one of its own.
func newBackend(cfg backend.Config) *gdbmi.Backend {
	if sharedPool == nil || cfg.Path != "" {
		return gdbmi.New(cfg)
	}
	return gdbmi.NewShared(cfg, sharedPool, gdbmi.Share{})
}

// watchRefused says whether the rank's watchpoints are refused: on a
// shared gdb where the debug registers do not trap (internal/debugregs),
// with an error that says so, checked here.
func (r *rank) watchRefused(expr string) bool {
	r.t.Helper()
	if !r.shared || debugregs.Work() {
		return false
	}
	_, err := r.do(wire.OpWatch, wire.Watch{Expr: expr, Mode: "write"})
	if err == nil || !strings.Contains(err.Error(), "--ranks-per-gdb 1") {
		r.t.Fatalf("watch %s on a shared gdb without debug registers: %v, want a refusal that says what works", expr, err)
	}
	return true
}
