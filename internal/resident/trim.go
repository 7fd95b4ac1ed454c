package resident

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A rank server trims itself once it has been quiet for Quiet, a pause
// longer than those within a script's or a stepping user's burst of
// commands, and collects when its memory grew by Garbage since it last
// did (or since its start): a member of a host node leaves a few
// kilobytes of garbage per command, so it collects every few hundred
// commands, at a pause, and never while it is idle.
const (
	Quiet   = 2 * time.Second
	Garbage = 1 << 20
)

// Trimmer keeps a process that works in bursts small while it waits. A
// rank server's work after its start maps back part of its executable
// (the kernel maps the pages around each one touched), and its heap grows
// by what every command allocates until the collector's first goal (4
// MB), then stays at that goal while its live data is a few hundred
// kilobytes; a collection in turn maps back the runtime's tables of the
// code, which it reads for every frame of every goroutine's stack.
// Untrimmed, a server that has answered a few thousand commands keeps
// about 10 MB resident for good.
//
// So, after each quiet spell, the trimmer lets go of the executable's
// pages again, and first collects and returns the free heap to the kernel
// if the process's anonymous memory grew enough since it last did. The
// next command maps back what it runs (a few dozen page faults per
// process). Nothing runs while the process is busy, nor while it stays
// quiet: an idle process is not woken.
type Trimmer struct {
	quiet   time.Duration
	garbage uint64
	report  func(error)

	start  sync.Once
	timer  *time.Timer
	mu     sync.Mutex
	base   uint64 // anonymous memory resident after the last collection, or at NewTrimmer
	onTrim func() // after each trim (tests wait on it)
}

// NewTrimmer returns a trimmer that trims once the process has been quiet
// for quiet, and collects when its anonymous memory has grown by garbage
// bytes since it last collected, or since NewTrimmer: made early in a
// start, it counts what the start leaves, which grows with the job (a
// server parses the whole routing file). report receives what failed
// (nil: nothing is reported).
func NewTrimmer(quiet time.Duration, garbage uint64, report func(error)) *Trimmer {
	t := &Trimmer{quiet: quiet, garbage: garbage, report: report}
	t.base = t.read()
	return t
}

// Busy says the process has just finished a piece of work. Each call
// puts off the next trim until the process has been quiet again; the
// first also lets go of the start's pages, at the first quiet spell and
// not at once: a host's hundreds of servers answer their first command
// together, at the end of a bring-up that their CPU bounds, and letting
// go (reading the process's maps, one madvise per mapping) was 8 % of a
// server's CPU from its exec to that first answer.
func (t *Trimmer) Busy() {
	t.start.Do(func() { t.timer = time.AfterFunc(t.quiet, t.trim) })
	t.timer.Reset(t.quiet)
}

// Started says the process's start is over. A start that left garbage
// enough to collect (a server of a job of 100k ranks parsed a routing
// file of megabytes and grouped its hosts) is trimmed at the next quiet
// spell, as after a piece of work, and not only once the first piece of
// work is done, which in a large job comes after the whole job is up.
// After a smaller start the trimmer waits for that first piece of work:
// the pages it would let go of now, the first command would map back.
func (t *Trimmer) Started() {
	t.mu.Lock()
	enough := t.read() >= t.base+t.garbage
	t.mu.Unlock()
	if enough {
		t.Busy()
	}
}

// trim runs after a quiet spell.
func (t *Trimmer) trim() {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch now := t.read(); {
	case now >= t.base+t.garbage:
		debug.FreeOSMemory()
		t.base = t.read()
	case now < t.base:
		t.base = now // the runtime gave some back by itself
	}
	t.drop()
	if t.onTrim != nil {
		t.onTrim()
	}
}

// read is how much anonymous memory (the heap, stacks, the runtime's
// own) the process has resident, in bytes: the kernel's count, which
// grows with the garbage a collection would free, and costs the process
// nothing to keep. The runtime's counts cost more: runtime.ReadMemStats
// leaves the process 0.4 MB more resident, and runtime/metrics's
// initialisation costs every server's start 0.1 ms. Unreadable, it is 0,
// and the trimmer never collects.
func (t *Trimmer) read() uint64 {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	// size resident shared text lib data dt, in pages; shared is the
	// resident pages backed by files.
	f := strings.Fields(string(statm))
	if len(f) < 3 {
		return 0
	}
	resident, err1 := strconv.ParseUint(f[1], 10, 64)
	shared, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || shared > resident {
		return 0
	}
	return (resident - shared) * uint64(os.Getpagesize())
}

func (t *Trimmer) drop() {
	if err := DropExecutable(); err != nil && t.report != nil {
		t.report(err)
	}
}
