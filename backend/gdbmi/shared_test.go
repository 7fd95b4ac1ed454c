package gdbmi_test

import (
	"context"
	"os"
	"strconv"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/backend/gdbmi"
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
