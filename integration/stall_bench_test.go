package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkStalledServer measures what one stopped interior server costs
// the rest of a 64-rank job, through the console as a user drives it:
// `sdm debug --json` on the sim backend, commands on its standard input.
// Server 2 (below server 0, 16 ranks in its subtree) is stopped with
// SIGSTOP, and at once `status` goes to every rank; reported are
//
//   - s-stop-to-answer: from the SIGSTOP until that answer has accounted
//     for every rank, the stopped subtree marked as not answering (mean
//     of the iterations), under the console's default deadline
//     (--timeout 30s) and a short one (--timeout 2s);
//   - ms-others-*: the round trip of `status` to the other 48 ranks, with
//     nothing stopped (quiet) and while the server stays stopped
//     (stopped), median and slowest over every iteration.
//
// The front end is part of the sdm binary measured, so
// SDM_TEST_BINARY=/path/to/sdm (see TestMain) measures another build,
// an older one included, in the same way; how the old build marked the
// subtree is logged.
func BenchmarkStalledServer(b *testing.B) {
	const n, victim, rounds = 64, 2, 10
	stalled := subtree(n, victim)
	others := wire.All(n).Minus(stalled)
	for _, timeout := range []string{"", "2s"} {
		name := "timeout=default"
		if timeout != "" {
			name = "timeout=" + timeout
		}
		b.Run(name, func(b *testing.B) {
			var toAnswer time.Duration
			var quiet, stopped []time.Duration
			marked := map[string]bool{}
			for b.Loop() {
				c := startConsole(b, n, timeout)
				c.command(b, wire.All(n), "status")
				for range rounds {
					quiet = append(quiet, c.timed(b, others))
				}
				server := childServer(b, c.p.cmd.Process.Pid, victim)
				if err := syscall.Kill(server, syscall.SIGSTOP); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				answer := c.command(b, wire.All(n), "status")
				toAnswer += time.Since(start)
				if got := answer.ok(); !got.Equal(others) {
					b.Fatalf("status of all with server %d stopped: ok %s, want %s", victim, got, others)
				}
				for _, l := range answer {
					if l.Status != "ok" {
						marked[fmt.Sprintf("[%s] %s: %s", l.Ranks, l.Status, l.Error)] = true
					}
				}
				for range rounds {
					stopped = append(stopped, c.timed(b, others))
				}
				if err := syscall.Kill(server, syscall.SIGCONT); err != nil {
					b.Fatal(err)
				}
				c.quit(b)
			}
			b.Logf("server %d stopped: its subtree answered %v", victim, slices.Sorted(maps.Keys(marked)))
			b.ReportMetric(toAnswer.Seconds()/float64(b.N), "s-stop-to-answer")
			slices.Sort(quiet)
			slices.Sort(stopped)
			b.ReportMetric(ms(quiet[len(quiet)/2]), "ms-others-quiet-median")
			b.ReportMetric(ms(stopped[len(stopped)/2]), "ms-others-stopped-median")
			b.ReportMetric(ms(stopped[len(stopped)-1]), "ms-others-stopped-max")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// consoleProc is `sdm debug --json` of a sim job, driven through pipes.
type consoleProc struct {
	p     *proc
	in    *os.File
	lines chan consoleLine // what it printed, one JSON object a line
}

// consoleLine is one line of the console's JSON output (docs/JSON.md): a
// command's reply, or news.
type consoleLine struct {
	Type    string `json:"type"`
	Command struct {
		Name string `json:"name"`
	} `json:"command"`
	Groups []group `json:"groups"`
}

// group is one group of a reply: ranks that answered alike.
type group struct {
	Ranks  string `json:"ranks"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// answer is the groups of one command's answer.
type answer []group

// ok is the ranks that answered ok.
func (a answer) ok() wire.RankSet {
	var ok wire.RankSet
	for _, l := range a {
		if l.Status == "ok" {
			r, _ := wire.ParseRankSet(l.Ranks)
			ok = ok.Union(r)
		}
	}
	return ok
}

// consoleWait bounds every wait for the console: longer than any deadline
// measured, so that the old build's slowest answer is measured too.
const consoleWait = 90 * time.Second

func startConsole(b *testing.B, n int, timeout string) *consoleProc {
	b.Helper()
	// An interior server with a subtree of its own: one node per rank.
	args := []string{"debug", "--json", "-n", strconv.Itoa(n), "--backend", "sim", "--tree", "ranks"}
	if timeout != "" {
		args = append(args, "--timeout", timeout)
	}
	cmd := testenv.Command(b, sdmBin, append(args, "--", "groups", "4")...)
	stdin, in, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	out, stdout, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = stdin, stdout
	c := &consoleProc{p: start(b, cmd), in: in, lines: make(chan consoleLine, 256)}
	stdin.Close()
	stdout.Close()
	b.Cleanup(func() { in.Close(); out.Close() })
	go func() {
		defer close(c.lines)
		scan := bufio.NewScanner(out)
		scan.Buffer(nil, 1<<20)
		for scan.Scan() {
			var l consoleLine
			if json.Unmarshal(bytes.TrimSpace(scan.Bytes()), &l) == nil {
				c.lines <- l
			}
		}
	}()
	return c
}

// command sends op to ranks and returns its answer once every rank is
// accounted for.
func (c *consoleProc) command(b *testing.B, ranks wire.RankSet, op string) answer {
	b.Helper()
	if _, err := fmt.Fprintf(c.in, "[%s] %s\n", ranks, op); err != nil {
		b.Fatalf("writing %s to the console: %v", op, err)
	}
	deadline := time.After(consoleWait)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				b.Fatalf("the console ended before [%s] %s was answered:\n%s", ranks, op, c.p.out.String())
			}
			if l.Type != "reply" || l.Command.Name != op {
				continue // news, or the job's start
			}
			return l.Groups
		case <-deadline:
			b.Fatalf("[%s] %s: no reply within %v\n%s", ranks, op, consoleWait, c.p.out.String())
		}
	}
}

// timed is the round trip of status to ranks, which must all answer ok.
func (c *consoleProc) timed(b *testing.B, ranks wire.RankSet) time.Duration {
	b.Helper()
	start := time.Now()
	a := c.command(b, ranks, "status")
	d := time.Since(start)
	if !a.ok().Equal(ranks) {
		b.Fatalf("status of %s: %v", ranks, a)
	}
	return d
}

// quit ends the session and waits for sdm to exit.
func (c *consoleProc) quit(b *testing.B) {
	b.Helper()
	fmt.Fprintln(c.in, "quit")
	c.in.Close()
	select {
	case <-c.p.done:
	case <-time.After(consoleWait):
		b.Fatalf("sdm still runs %v after quit\n%s", consoleWait, c.p.out.String())
	}
}

// childServer is the pid of the rank server that process parent (a
// local launcher) started for rank.
func childServer(b *testing.B, parent, rank int) int {
	b.Helper()
	want := []byte("\x00--server=" + strconv.Itoa(rank) + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+2:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmdline, want) { // every argument ends in a NUL
			return pid
		}
	}
	b.Fatalf("process %d started no server for rank %d", parent, rank)
	return 0
}
