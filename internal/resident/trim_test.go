package resident

import (
	"bytes"
	"runtime/metrics"
	"testing"
	"time"
)

// forced counts the collections the program asked for (debug.FreeOSMemory
// among them).
func forced() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sink holds memory until it is garbage.
var sink [][]byte

// startTrimmer returns a trimmer whose trims are sent on the channel it
// returns, and that has ended its start.
func startTrimmer(t *testing.T, quiet time.Duration, garbage uint64) (*Trimmer, <-chan struct{}) {
	t.Helper()
	trims := make(chan struct{}, 100)
	tr := NewTrimmer(quiet, garbage, func(err error) { t.Error(err) })
	tr.onTrim = func() { trims <- struct{}{} }
	tr.Busy()
	return tr, trims
}

// waitTrim waits for the next trim, for 10 s at most.
func waitTrim(t *testing.T, trims <-chan struct{}) {
	t.Helper()
	select {
	case <-trims:
	case <-time.After(10 * time.Second):
		t.Fatal("no trim 10 s after the process went quiet")
	}
}

// After a quiet spell that follows enough garbage, the trimmer collects
// (and lets go of the executable, which TestDropExecutable covers); after
// one that follows little, it does not collect.
func TestTrimmerCollectsWhenThereIsGarbage(t *testing.T) {
	tr, trims := startTrimmer(t, 20*time.Millisecond, 4<<20)
	before := forced()
	waitTrim(t, trims)
	if n := forced() - before; n != 0 {
		t.Errorf("%d collections after a quiet spell with little garbage, want none", n)
	}
	garbage(8 << 20)
	tr.Busy()
	waitTrim(t, trims)
	if n := forced() - before; n != 1 {
		t.Errorf("%d collections after 8 MB of garbage and a quiet spell, want 1", n)
	}
	tr.Busy()
	waitTrim(t, trims)
	if n := forced() - before; n != 1 {
		t.Errorf("%d collections after a second quiet spell with no new garbage, want still 1", n)
	}
}

// What a start leaves behind counts: a server that parsed a large routing
// file collects its garbage at its first quiet spell.
func TestTrimmerCollectsWhatTheStartLeft(t *testing.T) {
	trims := make(chan struct{}, 100)
	tr := NewTrimmer(20*time.Millisecond, 4<<20, func(err error) { t.Error(err) })
	tr.onTrim = func() { trims <- struct{}{} }
	before := forced()
	garbage(8 << 20)
	tr.Busy()
	waitTrim(t, trims)
	if n := forced() - before; n != 1 {
		t.Errorf("%d collections after a start that left 8 MB of garbage, want 1", n)
	}
}

// A start that left garbage enough to collect is trimmed at the first
// quiet spell after it, before any work; after a smaller start the
// trimmer waits for the first piece of work.
func TestTrimmerStartedCollectsALargeStart(t *testing.T) {
	const quiet = 20 * time.Millisecond
	for _, c := range []struct {
		left    int
		trimmed bool
	}{{8 << 20, true}, {0, false}} {
		trims := make(chan struct{}, 100)
		tr := NewTrimmer(quiet, 4<<20, func(err error) { t.Error(err) })
		tr.onTrim = func() { trims <- struct{}{} }
		before := forced()
		garbage(c.left)
		tr.Started()
		if !c.trimmed {
			select {
			case <-trims:
				t.Errorf("a start that left %d bytes was trimmed before any work", c.left)
			case <-time.After(50 * quiet):
			}
			continue
		}
		waitTrim(t, trims)
		if n := forced() - before; n != 1 {
			t.Errorf("%d collections after a start that left %d bytes, want 1", n, c.left)
		}
	}
}

// garbage makes n bytes that the process writes to, so that they are
// resident, and then lets go of.
func garbage(n int) {
	for range n / (128 << 10) {
		sink = append(sink, bytes.Repeat([]byte{1}, 128<<10))
	}
	sink = nil
}

// A process that keeps working is not trimmed, and one that stays quiet
// is trimmed once.
func TestTrimmerWaitsForQuiet(t *testing.T) {
	const quiet = time.Second
	tr, trims := startTrimmer(t, quiet, 1<<62)
	waitTrim(t, trims)
	// Work in steps well within the quiet spell, for longer than one.
	tick := time.NewTicker(quiet / 20)
	defer tick.Stop()
	for range 30 {
		<-tick.C
		tr.Busy()
		select {
		case <-trims:
			t.Fatalf("trimmed while busy")
		default:
		}
	}
	waitTrim(t, trims)
	select {
	case <-trims:
		t.Errorf("trimmed twice for one quiet spell")
	case <-time.After(2 * quiet):
	}
}
