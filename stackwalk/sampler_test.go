package stackwalk

import (
	"strings"
	"testing"
)

func TestAgreesWithEuStackC(t *testing.T) {
	s := NewSampler()
	defer s.Close()
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			bin := build(t, "gcc", "threads.c", "-g", opt, "-pthread")
			p := startProgram(t, "ready", bin)
			waitBlocked(t, p.cmd.Process.Pid)
			snap := agreeWithEuStack(t, s, p.cmd.Process.Pid)
			if len(snap.Threads) != 3 {
				t.Fatalf("%d threads, want 3:\n%s", len(snap.Threads), format(snap))
			}
			main := snap.Threads[0]
			var leafs int
			for _, f := range main.Frames {
				if f.Function == "leaf" {
					leafs++
					if !strings.HasSuffix(f.File, "threads.c") || f.Line == 0 {
						t.Errorf("leaf at %s:%d, want threads.c", f.File, f.Line)
					}
				}
			}
			if leafs != 4 || !strings.Contains(strings.Join(functions(main), " "), "middle main") {
				t.Errorf("main thread: %v, want leaf four times, then middle and main", functions(main))
			}
		})
	}
}
