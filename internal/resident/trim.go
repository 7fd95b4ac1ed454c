package resident

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
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
// if enough was allocated since it last did. The next command maps back
// what it runs (a few dozen page faults per process). Nothing runs while
// the process is busy, nor while it stays quiet: an idle process is not
// woken.
type Trimmer struct {
	quiet   time.Duration
	garbage uint64
	report  func(error)

	start  sync.Once
	timer  *time.Timer
	mu     sync.Mutex
	since  uint64 // allocated when it last collected
	onTrim func() // after each trim (tests wait on it)
}

// NewTrimmer returns a trimmer that trims once the process has been quiet
// for quiet, and collects when it has allocated at least garbage bytes
// since it last collected. report receives what failed (nil: nothing is
// reported).
func NewTrimmer(quiet time.Duration, garbage uint64, report func(error)) *Trimmer {
	return &Trimmer{quiet: quiet, garbage: garbage, report: report}
}

// Busy says the process has just finished a piece of work. The first
// call ends its start: the executable's pages that the start touched are
// let go at once (without a collection: the garbage of a start is less
// than what a collection would map back). Each call puts off the next
// trim until the process has been quiet again.
func (t *Trimmer) Busy() {
	t.start.Do(func() {
		t.since = t.read()
		t.timer = time.AfterFunc(t.quiet, t.trim)
		t.drop()
	})
	t.timer.Reset(t.quiet)
}

// trim runs after a quiet spell.
func (t *Trimmer) trim() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.read()-t.since >= t.garbage {
		debug.FreeOSMemory()
		t.since = t.read()
	}
	t.drop()
	if t.onTrim != nil {
		t.onTrim()
	}
}

// read is what the heap has ever allocated. It stops the world for a
// moment, which in a quiet process is nobody's; runtime/metrics would
// not, but its initialisation costs every server's start 0.1 ms.
func (t *Trimmer) read() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func (t *Trimmer) drop() {
	if err := DropExecutable(); err != nil && t.report != nil {
		t.report(err)
	}
}
