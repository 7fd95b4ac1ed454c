package gdbmi_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/wire"
)

// A rank attached while SIGCONT keeps coming (a starter or a shell's job
// control letting it go) is detached as it runs: gdb 13, asked to detach
// from a process that runs with such a signal on its way, failed an
// assertion and hung; the backend stops the rank first. On a gdb of
// its own: a shared gdb (non-stop) can lose the stop it asks for to the
// SIGCONT (docs/ARCHITECTURE.md, Known limits).
func TestDetachWhileSIGCONTComes(t *testing.T) {
	for range 8 {
		cmd, _ := sleeper(t)
		pid := cmd.Process.Pid
		r := newRank(t, 1, 2, "gdb")
		stop, flooded := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(flooded)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Microsecond):
					syscall.Kill(pid, syscall.SIGCONT)
				}
			}
		}()
		_, err := r.do(wire.OpAttach, wire.Attach{Pids: []int{0, pid}})
		close(stop)
		<-flooded
		if err == nil {
			_, err = r.do(wire.OpDetach, nil)
		}
		if err != nil {
			t.Fatalf("attach and detach while SIGCONT comes: %v", err)
		}
		if stopped, tracer := mpir.Traced(pid); stopped || tracer != 0 {
			t.Errorf("after detach: stopped %v, traced by %d", stopped, tracer)
		}
	}
}
