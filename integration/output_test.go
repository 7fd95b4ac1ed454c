package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// slowReader is a terminal that takes rate bytes a second: it reads the
// front end's standard output a line at a time and pauses to keep to the
// rate, as a console on a slow link does.
type slowReader struct {
	rate int // bytes a second; 0 reads at full speed
	// lines receives every line read, without its newline.
	lines chan string
}

func (r slowReader) read(out io.Reader) {
	defer close(r.lines)
	in := bufio.NewReaderSize(out, 64<<10)
	var start time.Time
	got := 0
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		if start.IsZero() {
			start = time.Now()
		}
		r.lines <- strings.TrimSuffix(line, "\n")
		got += len(line)
		if r.rate > 0 {
			if ahead := time.Duration(got)*time.Second/time.Duration(r.rate) - time.Since(start); ahead > time.Millisecond {
				time.Sleep(ahead)
			}
		}
	}
}

// rssPeaks are the largest resident sets seen, in bytes: of the front end,
// and of the largest of its sdm servers.
type rssPeaks struct{ front, server int64 }

// peakRSS samples the resident sets of process pid and of the sdm
// processes below it every 50 ms until stop is closed.
func peakRSS(pid int, stop <-chan struct{}) <-chan rssPeaks {
	peak := make(chan rssPeaks, 1)
	go func() {
		var max rssPeaks
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			max.front = maxOf(max.front, vmRSS(pid))
			for _, server := range sdmBelow(pid) {
				max.server = maxOf(max.server, vmRSS(server))
			}
			select {
			case <-tick.C:
			case <-stop:
				peak <- max
				return
			}
		}
	}()
	return peak
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// sdmBelow lists the sdm processes (sdm, or the servers' sdm-server and sdm-rank)
// that descend from pid.
func sdmBelow(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	name := map[int]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 2 {
			continue
		}
		parent[p], _ = strconv.Atoi(f[1])
		name[p] = string(stat[open+1 : end])
	}
	var below []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				if name[p] == "sdm" || name[p] == "sdm-server" || name[p] == "sdm-rank" {
					below = append(below, p)
				}
				break
			}
		}
	}
	return below
}

// vmRSS is the resident set of process pid in bytes (0 once it is gone).
func vmRSS(pid int) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// floodLines checks the lines examples/flood prints, as the console shows
// them ("[R] rank R line N ....", length bytes with the newline before the
// console's label): each whole, each rank's numbered from 0 without a gap.
// A rank stopped in the middle of a write leaves the start of a line,
// which prints before its stop: cut holds the ranks that did.
type floodLines struct {
	length int
	next   map[int]int // rank → number of its next line
	cut    map[int]bool
	last   int // the rank of the latest line
	bytes  int64
	bad    []string
}

func newFloodLines(length int) *floodLines {
	return &floodLines{length: length, next: make(map[int]int), cut: make(map[int]bool)}
}

// add takes one line the console printed, and says whether it was one of
// the flood's lines, whole or cut.
func (f *floodLines) add(line string) bool {
	label, text, ok := strings.Cut(line, "] ")
	if !ok || !strings.HasPrefix(label, "[") || !strings.HasPrefix(text, "rank ") || strings.Contains(text, " done ") {
		return false
	}
	rank, err := strconv.Atoi(label[1:])
	if err != nil {
		f.fail("output of several ranks merged: %.80q", line)
		return true
	}
	f.bytes += int64(len(text)) + 1
	f.last = rank
	head := "rank " + label[1:] + " line " + strconv.Itoa(f.next[rank]) + " "
	switch {
	case f.cut[rank]:
		f.fail("rank %d printed %.80q after the start of a line", rank, text)
	case len(text) == f.length-1 && strings.HasPrefix(text, head) && dots(text[len(head):]):
	case len(text) < f.length-1 && (strings.HasPrefix(head, text) || strings.HasPrefix(text, head) && dots(text[len(head):])):
		f.cut[rank] = true
	default:
		f.fail("rank %d's line %d came as %.80q (%d bytes with its newline), want %q and dots (%d)", rank, f.next[rank], text, len(text)+1, head, f.length)
	}
	f.next[rank]++
	return true
}

// dots reports whether s is all dots.
func dots(s string) bool { return strings.Trim(s, ".") == "" }

// cuts reports the ranks whose last line was cut, as an error.
func (f *floodLines) cuts(t *testing.T) {
	t.Helper()
	for r := range f.cut {
		t.Errorf("rank %d's line %d came cut short", r, f.next[r]-1)
	}
}

func (f *floodLines) fail(format string, args ...any) {
	if len(f.bad) < 10 {
		f.bad = append(f.bad, fmt.Sprintf(format, args...))
	}
}

// floodRun runs `sdm debug -n 2` on examples/flood with args after the
// program, feeding it script on its standard input, while reader reads
// its output. onLine sees every line as it is read, and may write to the
// front end's input. It returns the peak resident sets.
func floodRun(t testing.TB, reader slowReader, script string, onLine func(line string, input io.Writer), args ...string) (peak rssPeaks, stderr string) {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	cmd := testenv.Command(t, sdmBin, append([]string{"debug", "-n", "2", "--timeout", "60s", "--", filepath.Join(bin, "flood")}, args...)...)
	input, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	rss := peakRSS(cmd.Process.Pid, stop)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		reader.read(out)
	}()
	io.WriteString(input, script)
	for line := range reader.lines {
		onLine(line, input)
	}
	wg.Wait()
	input.Close()
	err = cmd.Wait()
	close(stop)
	if err != nil {
		t.Errorf("sdm: %v\n%s", err, errOut.String())
	}
	return <-rss, errOut.String()
}

// Two ranks flood a front end whose terminal reads slowly: the front end's
// memory stays bounded, every line arrives whole and in order, and all of
// it prints before the stop that followed it.
func TestFloodSlowTerminal(t *testing.T) {
	const mb, length = 30, 100
	lines := newFloodLines(length)
	// linesAtStop is, for each rank, how many of its lines had printed
	// when its stop in done did.
	linesAtStop := map[int]int{}
	peak, stderr := floodRun(t, slowReader{rate: 12 << 20, lines: make(chan string, 64)},
		"break done\nrun\nwait\nprint lines\nquit\n",
		func(line string, _ io.Writer) {
			if lines.add(line) || !strings.Contains(line, " stopped in done ") {
				return
			}
			if ranks, err := wire.ParseRankSet(line[1:strings.IndexByte(line, ']')]); err == nil {
				ranks.Each(func(r int) bool {
					linesAtStop[r] = lines.next[r]
					return true
				})
			}
		}, strconv.Itoa(mb), strconv.Itoa(length))
	for _, bad := range lines.bad {
		t.Error(bad)
	}
	lines.cuts(t)
	want := mb * 1000 * 1000 / length
	for r := range 2 {
		if lines.next[r] != want {
			t.Errorf("rank %d: %d lines of %d arrived", r, lines.next[r], want)
		}
	}
	if wantBytes := int64(2 * want * length); lines.bytes != wantBytes {
		t.Errorf("%d bytes of output arrived, want %d", lines.bytes, wantBytes)
	}
	for r := range 2 {
		switch at, ok := linesAtStop[r]; {
		case !ok:
			t.Errorf("no stop in done was printed for rank %d", r)
		case at != want:
			t.Errorf("rank %d's stop in done printed after %d of the %d lines it wrote before it", r, at, want)
		}
	}
	// Before output was bounded the front end held all of it: 60 MB of
	// output took it past 250 MB.
	t.Logf("peak resident sets: front end %d MiB, server %d MiB", peak.front>>20, peak.server>>20)
	if peak.front > 120<<20 {
		t.Errorf("the front end's resident set reached %d MiB while 2 ranks printed %d MB to a slow terminal; want it bounded", peak.front>>20, mb)
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}

// Lines of 100 KiB, each written in 25 pieces, and read by the server in
// pieces of its own while the terminal above reads slowly, print whole.
func TestLongLinesWhole(t *testing.T) {
	const mb, length = 8, 100 << 10
	lines := newFloodLines(length)
	floodRun(t, slowReader{rate: 8 << 20, lines: make(chan string, 4)}, "run\nwait\nquit\n",
		func(line string, _ io.Writer) { lines.add(line) }, strconv.Itoa(mb), strconv.Itoa(length))
	for _, bad := range lines.bad {
		t.Error(bad)
	}
	lines.cuts(t)
	want := (mb*1000*1000 + length - 1) / length
	for r := range 2 {
		if lines.next[r] != want {
			t.Errorf("rank %d: %d lines of %d arrived", r, lines.next[r], want)
		}
	}
}

// A halt while the ranks flood a slow terminal stops them at once: the
// stop prints after no more than the bounded output in flight, however
// much the ranks could have written meanwhile, and they never finish.
func TestHaltDuringFlood(t *testing.T) {
	const rate = 8 << 20
	lines := newFloodLines(100)
	var (
		halted   bool
		haltedAt int64        // output bytes read when the halt was typed
		stopAt   int64        = -1
		stopped  wire.RankSet // ranks whose stop has printed
		haltTime time.Time
		took     time.Duration
		finished bool
		// afterStop counts the lines of ranks printed after their stop:
		// they wrote them all before it.
		afterStop int
	)
	floodRun(t, slowReader{rate: rate, lines: make(chan string, 64)}, "run\n",
		func(line string, input io.Writer) {
			if lines.add(line) {
				if stopped.Contains(lines.last) {
					afterStop++
				}
				if !halted && lines.bytes >= 4<<20 {
					halted, haltedAt, haltTime = true, lines.bytes, time.Now()
					// wait, not status: an answer may print before output
					// its rank wrote before it stopped (answers wait for
					// that output only briefly); the stop itself never does.
					io.WriteString(input, "halt\nwait\nquit\n")
				}
				return
			}
			switch {
			case strings.Contains(line, " done "):
				finished = true
			case halted && strings.Contains(line, " stopped in "):
				if ranks, err := wire.ParseRankSet(line[1:strings.IndexByte(line, ']')]); err == nil {
					stopped = stopped.Union(ranks)
				}
				if stopAt < 0 && stopped.Equal(wire.All(2)) {
					stopAt, took = lines.bytes, time.Since(haltTime)
				}
			}
		}, "100000")
	for _, bad := range lines.bad {
		t.Error(bad)
	}
	switch {
	case !halted:
		t.Fatal("the flood never reached 4 MB")
	case stopAt < 0:
		t.Fatalf("no stop printed after the halt for ranks %v", wire.All(2).Minus(stopped))
	case finished:
		t.Error("a rank finished its 100 GB: the halt did not stop it")
	case afterStop > 0:
		t.Errorf("%d lines of output printed after their rank's stop", afterStop)
	}
	// What prints between the halt and the stop is what was in flight
	// (the front end's, the tree's and the servers' bounded buffers, and
	// the terminals', about 4 MiB) and what the ranks wrote until gdb
	// stopped them, which on a loaded node takes a second or so at the
	// ranks' 12 MB/s. Before the buffers were bounded, it was everything
	// the ranks wrote before the halt.
	t.Logf("the stop printed after %d KiB more output, %v after the halt", (stopAt-haltedAt)>>10, took.Round(time.Millisecond))
	if more := stopAt - haltedAt; more > 32<<20 {
		t.Errorf("the stop printed after %d MiB more output: the halt waited for the output queued before it", more>>20)
	}
}
