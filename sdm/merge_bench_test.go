package sdm

import (
	"fmt"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkEventBatch batches one event from each of 1024 ranks, with
// four distinct bodies, as a node does when a broadcast continue ends in
// stops: the batch goes up once it covers every rank.
func BenchmarkEventBatch(b *testing.B) {
	const n = 1024
	bodies := make([][]byte, 4)
	for i := range bodies {
		bodies[i] = wire.MustEncode(wire.State{State: "stopped", Reason: "breakpoint-hit", Frame: wire.Frame{Func: fmt.Sprint("f", i), File: "plain.c", Line: 10 + i}})
	}
	sent := 0
	bt := newBatcher(time.Hour, wire.All(n), func(m *wire.Message) { sent += len(m.Groups) })
	for b.Loop() {
		for r := range n {
			bt.add(wire.EventStopped, wire.Group{Ranks: wire.Single(r), Body: bodies[r%len(bodies)]})
		}
	}
	if sent == 0 {
		b.Fatal("no batch went up")
	}
}

// BenchmarkOutputQueue queues two lines from each of 1024 ranks, the same
// lines from all, as a node's output stream does under a broadcast print.
func BenchmarkOutputQueue(b *testing.B) {
	const n = 1024
	lines := [][]byte{
		wire.MustEncode(wire.Output{Stream: "tty", Text: "hello from a rank\n"}),
		wire.MustEncode(wire.Output{Stream: "tty", Text: "done\n"}),
	}
	s := newOutputStream(time.Hour, wire.All(n), func(*wire.Message) {}, make(chan struct{}))
	for b.Loop() {
		for r := range n {
			for _, l := range lines {
				s.add(wire.Group{Ranks: wire.Single(r), Body: l}, nil, false)
			}
		}
		s.mu.Lock()
		if len(s.runs) != 1 || len(s.runs[0].groups) != len(lines) {
			b.Fatalf("%d runs", len(s.runs))
		}
		s.runs, s.size, s.covered = nil, 0, wire.RankSet{}
		s.mu.Unlock()
	}
}
