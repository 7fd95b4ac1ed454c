package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkDAPStop measures what an editor waits for: from
// setBreakpoints and configurationDone to the stopped event with every
// rank stopped, for 64 ranks of plain under real gdb (started lazily, at
// the breakpoints) on the local launcher, next to the console's path for
// the same (break, run, every rank's stop at the front end); and how
// many messages sdm dap sends for one merged stop of 256 simulated ranks
// (pause to the stopped event: messages/stop).
func BenchmarkDAPStop(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	root, _ := filepath.Abs("..")
	plain, source := filepath.Join(bin, "plain"), filepath.Join(root, "examples", "plain", "plain.c")
	const n = 64
	b.Run(fmt.Sprintf("ranks=%d/dap", n), func(b *testing.B) {
		for b.Loop() {
			c := launchDAP(b, "launch", map[string]any{"program": plain, "ranks": n, "rm": "local", "cwd": root})
			start := time.Now()
			c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source},
				"breakpoints": []any{map[string]any{"line": 15}, map[string]any{"line": 22}}})
			c.call("configurationDone", nil)
			c.stopped("breakpoint")
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-stopped")
			c.call("disconnect", nil)
		}
	})
	b.Run(fmt.Sprintf("ranks=%d/console", n), func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			s, err := launcher.Launch(ctx, launcher.Options{RM: "local", Size: n, Debugger: "gdb-mi", GDB: "lazy", SDM: sdmBin, Program: plain})
			if err != nil {
				b.Fatal(err)
			}
			all := wire.All(n)
			command(b, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: plain}))
			start := time.Now()
			command(b, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "plain.c:15"}))
			command(b, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "plain.c:22"}))
			command(b, s.Command, all, wire.OpRun, nil)
			stoppedAll(b, s.Session, all)
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-stopped")
			s.End(time.Minute)
			cancel()
		}
	})
	b.Run("ranks=256/sim", func(b *testing.B) {
		for b.Loop() {
			c := launchDAP(b, "launch", map[string]any{"program": "ring", "ranks": 256, "rm": "local", "debugger": "sim"})
			c.call("configurationDone", nil)
			c.call("threads", nil)
			c.seen = nil
			sent := c.sent
			c.call("pause", map[string]any{"threadId": 1})
			for {
				if e := c.event("stopped").(*godap.StoppedEvent); e.Body.AllThreadsStopped {
					break
				}
			}
			b.ReportMetric(float64(c.sent-sent), "messages/stop")
			c.call("disconnect", nil)
		}
	})
}
