package routing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReadFile reads a routing file and groups its hosts, as every
// server does at its start, for jobs of 128 ranks per host: at 200k
// ranks, each of a host's servers pays it.
func BenchmarkReadFile(b *testing.B) {
	for _, n := range []int{1024, 200_000} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			var sb strings.Builder
			fmt.Fprintf(&sb, "%d\n", n)
			for i := range n {
				fmt.Fprintf(&sb, "%d node-%04d %d\n", i, i/128, 20000+i%40000)
			}
			path := filepath.Join(b.TempDir(), "routes")
			if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tab, err := ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				if tree := NewTree(tab, 0, true); tree.Hosts.Count() != (n+127)/128 {
					b.Fatalf("%d hosts", tree.Hosts.Count())
				}
			}
		})
	}
}

// BenchmarkWaitExisting waits for a routing file that is there already,
// whole, as most servers find it: a watch set up and closed for nothing
// cost each of them 10 ms (closing an inotify descriptor waits for the
// kernel's grace period) and a thread.
func BenchmarkWaitExisting(b *testing.B) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d\n", 256)
	for i := range 256 {
		fmt.Fprintf(&sb, "%d node-%d %d\n", i, i/128, 20000+i)
	}
	path := filepath.Join(b.TempDir(), "routes")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Wait(context.Background(), path); err != nil {
			b.Fatal(err)
		}
	}
}
