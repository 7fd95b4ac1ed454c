package sdm

import (
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// A node queues at most outputLimit of its children's output while its
// parent does not read: the child that would pass it waits, and goes on
// once the queue has gone up. Marks never wait, and keep their place
// after the output before them.
func TestOutputStreamBounded(t *testing.T) {
	sent := make(chan *wire.Message)
	done := make(chan struct{})
	defer close(done)
	s := newOutputStream(0, wire.All(2), func(m *wire.Message) {
		select {
		case sent <- m:
		case <-done:
		}
	}, done)
	go s.run()
	line := []byte(strings.Repeat("x", 1<<10))
	added := make(chan int)
	go func() {
		for i := 0; i < 4*outputLimit/len(line); i++ {
			s.add(wire.Group{Ranks: wire.Single(i % 2), Body: line}, nil, true)
			added <- i
		}
		close(added)
	}()
	// The writer takes what is queued and blocks sending it; then the
	// queue fills to its bound and the child waits.
	count := 0
	for stalled := false; !stalled; {
		select {
		case <-added:
			count++
		case <-time.After(time.Second):
			stalled = true
		}
	}
	// The writer holds what it took, the queue as much again.
	if max := 2 * (outputLimit/len(line) + 1); count > max {
		t.Fatalf("%d pieces of %d bytes queued while the parent read nothing, want at most %d", count, len(line), max)
	}
	s.mark(wire.Single(0)) // does not wait
	// The parent reads: everything goes up, the mark after all the output
	// queued before it.
	var got, marks int
	total := 4 * outputLimit / len(line)
	for got < total || marks == 0 {
		select {
		case m := <-sent:
			if m.Op == wire.EventOutputMark {
				if got < count {
					t.Fatalf("the mark went up after %d pieces, before the %d queued before it", got, count)
				}
				marks++
				continue
			}
			for _, g := range m.Groups {
				got += g.Ranks.Count()
			}
		case <-added:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d pieces went up", got, total)
		}
	}
}
