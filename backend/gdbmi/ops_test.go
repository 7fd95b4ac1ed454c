package gdbmi

import (
	"context"
	"errors"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/op"
)

// TestEveryOpHasAMethod enumerates the op table: gdb runs every op, so
// none is answered as unknown or left out. A backend without a program
// answers each at once, without starting gdb (start, which would, is
// left out here and run by every other test).
func TestEveryOpHasAMethod(t *testing.T) {
	b := New(backend.Config{Rank: 0, Size: 1, Path: "/nonexistent/gdb"})
	defer b.Close()
	for _, s := range op.Table {
		if s.Tree || s.Name == op.Start.Name {
			continue
		}
		errc := make(chan error, 1)
		b.Do(context.Background(), s.Name, nil, func(_ []byte, err error) { errc <- err })
		if err := <-errc; errors.Is(err, backend.ErrUnknownOp) || errors.Is(err, backend.ErrUnsupported) {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}
