package sdm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend/sim"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkBroadcastInProcess runs a whole tree in this process, so that
// it measures the tree's own work per broadcast without the cost of a
// thousand processes taking turns on the CPUs.
func BenchmarkBroadcastInProcess(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			tt := startTree(b, n, 0, "groups", "4")
			for b.Loop() {
				groups, err := tt.session.Command(context.Background(), wire.All(n), wire.OpWhere, nil, 30*time.Second)
				if err != nil || len(groups) != 4 {
					b.Fatalf("where: %s %v", describe(groups), err)
				}
			}
		})
	}
}

// BenchmarkMergeMillion merges the answers of a million simulated ranks to
// where, spread over eight distinct stacks, into groups: the reduction a
// tree performs, all in one place.
func BenchmarkMergeMillion(b *testing.B) {
	const n = 1 << 20
	const groups = 8
	bodies := make([][]byte, n)
	for r := range bodies {
		frames, err := sim.Scenario("groups", []string{"8", "6"}, r, n)
		if err != nil {
			b.Fatal(err)
		}
		bodies[r] = wire.MustEncode(wire.Stack{Frames: frames})
	}
	for b.Loop() {
		var m op.Identical
		for r, body := range bodies {
			m.AddRank(r, wire.StatusOK, body)
		}
		out := m.Groups()
		if len(out) != groups || out[0].Ranks.Count() != n/groups {
			b.Fatalf("%d groups", len(out))
		}
	}
}

// BenchmarkSampleInProcess samples the stacks of simulated ranks in 16
// classes through a whole tree in this process: the time is the tree's
// merging of call trees on the way up, bytes/answer what reaches the
// front end, which grows with the rank sets only (the 16 paths stay 16).
func BenchmarkSampleInProcess(b *testing.B) {
	for _, n := range []int{64, 1024} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			tt := startTree(b, n, 0, "groups", "16")
			body := wire.MustEncode(wire.Sample{Count: 1})
			bytes := 0
			for b.Loop() {
				groups, err := tt.session.Command(context.Background(), wire.All(n), wire.OpSample, body, 30*time.Second)
				if err != nil || len(groups) != 1 || groups[0].Ranks.Count() != n {
					b.Fatalf("sample: %s %v", describe(groups), err)
				}
				bytes = len(groups[0].Body)
			}
			b.ReportMetric(float64(bytes), "bytes/answer")
		})
	}
}
