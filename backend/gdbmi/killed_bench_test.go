package gdbmi_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/gdbmi"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkKilledEnd is how long a rank's process killed from outside
// (SIGKILL, as the OOM killer or a user would) takes to be told ended,
// from the kill to the backend's exited event, running and stopped at a
// breakpoint, on the gdb the tests' mode gives (SDM_TEST_RANKS_PER_GDB),
// and how long the backend's Close takes after it (gdb letting go of
// what is left of the process): on a shared gdb, a process that runs is
// reaped through an interrupt that makes gdb look, bounded by reapWait.
func BenchmarkKilledEnd(b *testing.B) {
	prog := filepath.Join(testenv.Examples(b), "plain")
	for _, stopped := range []bool{false, true} {
		name := map[bool]string{false: "running", true: "at-breakpoint"}[stopped]
		b.Run(name, func(b *testing.B) {
			var took, closing time.Duration
			for range b.N {
				r := newRank(b, 0, 1, "")
				r.start(prog, "30")
				if stopped {
					r.must(wire.OpBreak, wire.Break{Location: "compute"}, nil)
				}
				r.must(wire.OpRun, nil, nil)
				r.event(map[bool]string{false: wire.EventRunning, true: wire.EventStopped}[stopped])
				begin := time.Now()
				if err := syscall.Kill(gdbmi.Pid(r.b), syscall.SIGKILL); err != nil {
					b.Fatal(err)
				}
				if op, st := r.next(10*time.Second, wire.EventExited, wire.EventStopped); op != wire.EventExited || st.Signal != "SIGKILL" {
					b.Fatalf("after SIGKILL: %s %+v", op, st)
				}
				took += time.Since(begin)
				begin = time.Now()
				r.b.Close()
				closing += time.Since(begin)
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms-to-end")
			b.ReportMetric(float64(closing.Microseconds())/1000/float64(b.N), "ms-close")
		})
	}
}
