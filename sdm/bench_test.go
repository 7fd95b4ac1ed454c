package sdm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
