package hold

import (
	"os/exec"
	"testing"
)

// BenchmarkStart runs a program that ends at once, held from its start
// to its end, next to the same program run plainly: what holding costs a
// rank's start.
func BenchmarkStart(b *testing.B) {
	bin := victim(b)
	b.Run("held", func(b *testing.B) {
		for b.Loop() {
			p, err := Start(exec.Command(bin))
			if err != nil {
				b.Fatal(err)
			}
			for range p.Events() {
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			// It ends at once, with status 9: its input is empty.
			if err := exec.Command(bin).Run(); err != nil && exec.Command(bin).ProcessState != nil {
				b.Fatal(err)
			}
		}
	})
}
