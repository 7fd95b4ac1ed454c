package console_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/testkit/simtree"
	"github.com/sdm-hpc/sdm/wire"
)

// counted is a tree that counts the bytes of the answers to one op that
// reach the front end: bodies and rank sets.
type counted struct {
	console.Tree
	op    string
	mu    sync.Mutex
	bytes int
}

func (c *counted) Command(ctx context.Context, ranks wire.RankSet, op string, body []byte, timeout time.Duration) ([]wire.Group, error) {
	groups, err := c.Tree.Command(ctx, ranks, op, body, timeout)
	if op == c.op {
		c.mu.Lock()
		for _, g := range groups {
			c.bytes += len(g.Body) + len(wire.MustEncode(g.Ranks))
		}
		c.mu.Unlock()
	}
	return groups, err
}

// deadlockOn runs deadlock on a simulated tree of n ranks running program,
// and returns what it printed and the bytes of queues the front end got.
func deadlockOn(t testing.TB, n int, program string, args ...string) (string, int) {
	tt := simtree.Start(t, simtree.Options{Size: n, ConnectTimeout: time.Minute})
	tt.Ready(program, args...)
	tree := &counted{Tree: tt.Session, op: wire.OpQueues}
	var out strings.Builder
	c := console.New(tree, &out, console.Options{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "deadlock"); err != nil {
		t.Fatalf("deadlock on %d ranks of %s: %v\n%s", n, program, err, out.String())
	}
	return out.String(), tree.bytes
}

// TestDeadlockAtScale diagnoses simulated jobs from queues the tree has
// merged: the front end receives as many bytes for 256 ranks as for 32
// (BenchmarkDeadlockSim1024 measures 1024).
func TestDeadlockAtScale(t *testing.T) {
	var bytes []int
	for _, n := range []int{32, 256} {
		out, b := deadlockOn(t, n, "deadlock")
		want := fmt.Sprintf("diagnosis: deadlock: a cycle of %d ranks: ranks 0-%d each wait in MPI_Send to rank+1, tag 0", n, n-1)
		if !strings.Contains(out, want) {
			t.Errorf("%d ranks: no %q in:\n%s", n, want, out)
		}
		bytes = append(bytes, b)
	}
	if bytes[1] > bytes[0]+16 {
		t.Errorf("queues at the front end: %d bytes for 32 ranks, %d for 256: they grow with the ranks", bytes[0], bytes[1])
	}
	out, _ := deadlockOn(t, 256, "hang", "200")
	for _, want := range []string{"diagnosis: ranks 0-199,201-255 wait for rank 200, which is not in MPI: in compute at hang.c:15"} {
		if !strings.Contains(out, want) {
			t.Errorf("hang: no %q in:\n%s", want, out)
		}
	}
}

// BenchmarkDeadlockSim1024 is deadlock on 1024 simulated ranks in a ring
// of blocking sends, from the command to the printed diagnosis, with the
// bytes of queues that reach the front end.
func BenchmarkDeadlockSim1024(b *testing.B) {
	tt := simtree.Start(b, simtree.Options{Size: 1024})
	tt.Ready("deadlock")
	tree := &counted{Tree: tt.Session, op: wire.OpQueues}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	for b.Loop() {
		var out strings.Builder
		c := console.New(tree, &out, console.Options{Timeout: time.Minute})
		if err := c.Exec(ctx, "deadlock"); err != nil || !strings.Contains(out.String(), "a cycle of 1024 ranks") {
			b.Fatalf("deadlock: %v\n%s", err, out.String())
		}
	}
	b.ReportMetric(float64(tree.bytes)/float64(b.N), "queue-bytes/op")
}

// compareOn runs compare EXPR on a simulated tree of n ranks and returns
// what it printed and the bytes of answers the front end got.
func compareOn(t testing.TB, tt *simtree.Tree, expr string) (string, int) {
	tree := &counted{Tree: tt.Session, op: wire.OpCompare}
	var out strings.Builder
	c := console.New(tree, &out, console.Options{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Exec(ctx, "compare "+expr); err != nil {
		t.Fatalf("compare %s: %v\n%s", expr, err, out.String())
	}
	return out.String(), tree.bytes
}

// TestCompareAtScale: one expression over simulated ranks, merged in the
// tree: the extremes and the outlier named, arrays' first difference
// found, as many bytes at the front end for 256 ranks as for 32
// (BenchmarkCompareSim1024 measures 1024).
func TestCompareAtScale(t *testing.T) {
	var bytes []int
	for _, n := range []int{32, 256} {
		tt := simtree.Start(t, simtree.Options{Size: n, ConnectTimeout: time.Minute})
		tt.Ready("ring")
		out, b := compareOn(t, tt, "residual")
		for _, want := range []string{
			fmt.Sprintf("[0-%d] residual: %d values, min 1e-06 (rank", n-1, n),
			fmt.Sprintf("outliers (over 3 sd from the mean): rank %d = ", n/2),
			"histogram 1e-06 |",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%d ranks: no %q in:\n%s", n, want, out)
			}
		}
		bytes = append(bytes, b)
		out, _ = compareOn(t, tt, "grid")
		if want := "grid: arrays of 8 elements; ranks differ first at [3]: "; !strings.Contains(out, want) {
			t.Errorf("%d ranks: no %q in:\n%s", n, want, out)
		}
		out, _ = compareOn(t, tt, "nosuch")
		if want := fmt.Sprintf("[0-%d] error: ", n-1); !strings.Contains(out, want) || !strings.Contains(out, "nosuch") {
			t.Errorf("%d ranks: no %q in:\n%s", n, want, out)
		}
	}
	if bytes[1] > bytes[0]+64 {
		t.Errorf("compare at the front end: %d bytes for 32 ranks, %d for 256: they grow with the ranks", bytes[0], bytes[1])
	}
}

// BenchmarkCompareSim1024 is compare on 1024 simulated ranks, from the
// command to the printed summary, with the bytes that reach the front
// end.
func BenchmarkCompareSim1024(b *testing.B) {
	tt := simtree.Start(b, simtree.Options{Size: 1024})
	tt.Ready("ring")
	bytes := 0
	for b.Loop() {
		out, n := compareOn(b, tt, "residual")
		if !strings.Contains(out, "1024 values") {
			b.Fatalf("compare: %s", out)
		}
		bytes = n
	}
	b.ReportMetric(float64(bytes), "front-end-bytes/op")
}
