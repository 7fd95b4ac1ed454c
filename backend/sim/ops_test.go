package sim

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/op"
)

// TestOpsTheSimulatorHas enumerates the op table: the simulator runs the
// ops of the lifecycle and says plainly that it leaves out the others.
func TestOpsTheSimulatorHas(t *testing.T) {
	has := []string{op.Start.Name, op.Status.Name, op.Run.Name, op.Continue.Name, op.Halt.Name,
		op.Kill.Name, op.Where.Name, op.Backtrace.Name, op.Sample.Name, op.Queues.Name, op.Evaluate.Name, op.Compare.Name, op.Dlopen.Name, op.Plant.Name}
	for _, s := range op.Table {
		if s.Tree {
			continue
		}
		sim := New(backend.Config{Rank: 0, Size: 1})
		errc := make(chan error, 1)
		sim.Do(context.Background(), s.Name, nil, func(_ []byte, err error) { errc <- err })
		err := <-errc
		sim.Close()
		if errors.Is(err, backend.ErrUnknownOp) {
			t.Errorf("%s: the dispatcher does not know it: %v", s.Name, err)
		}
		if left := errors.Is(err, backend.ErrUnsupported); left == slices.Contains(has, s.Name) {
			t.Errorf("%s: answered %v; the simulator has %v", s.Name, err, has)
		}
	}
}
