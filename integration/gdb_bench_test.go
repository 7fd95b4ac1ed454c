package integration

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkGDB64 debugs 64 ranks of plain with gdb on the local launcher
// and measures: the start command (gdb starting and loading the program
// on every rank), run to the merged breakpoint stop at the front end, the
// last rank's stop (as its server logged it) to the stop at the front end,
// and a stacks tree over all ranks.
func BenchmarkGDB64(b *testing.B) {
	testenv.RequireTool(b, "gdb")
	bin := testenv.Examples(b)
	const n = 64
	all := wire.All(n)
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		s, err := launcher.Launch(ctx, launcher.Options{Size: n, Debugger: "gdb-mi", SDM: sdmBin, Debug: true})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, "plain")})
		if g, err := s.Command(ctx, all, wire.OpStart, body, time.Minute); err != nil || !okRanks(g).Equal(all) {
			b.Fatalf("start: %s %v", describe(g), err)
		}
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "ms-start")
		s.Command(ctx, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "compute"}), time.Minute)
		s.Command(ctx, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "special"}), time.Minute)
		t1 := time.Now()
		s.Command(ctx, all, wire.OpRun, nil, time.Minute)
		var stopped wire.RankSet
		for !stopped.Equal(all) {
			ev, err := s.NextEvent(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if ev.Op == wire.EventStopped {
				stopped = stopped.Union(ev.Group.Ranks)
			}
		}
		arrived := time.Now()
		b.ReportMetric(float64(arrived.Sub(t1).Milliseconds()), "ms-run-to-stop")
		last := lastLogged(b, filepath.Join(s.Dir, "servers.log"), "event stopped")
		b.ReportMetric(float64(arrived.Sub(last).Microseconds())/1000, "ms-last-stop-to-client")
		t2 := time.Now()
		groups, err := s.Command(ctx, all, wire.OpWhere, nil, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := console.BuildStackTree(groups); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(t2).Microseconds())/1000, "ms-stacks")
		b.StopTimer()
		s.End(30 * time.Second)
		cancel()
		b.StartTimer()
	}
}

// lastLogged returns the time of the last log line containing what.
func lastLogged(b *testing.B, path, what string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var last time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, what) {
			continue
		}
		// "sdm[rank 3] 2026/11/22 03:30:01.123456 event stopped"
		_, rest, _ := strings.Cut(line, "] ")
		if len(rest) < 26 {
			continue
		}
		t, err := time.ParseInLocation("2006/01/02 15:04:05.000000", rest[:26], time.Local)
		if err == nil && t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		b.Fatalf("%s: no line with %q", path, what)
	}
	return last
}
