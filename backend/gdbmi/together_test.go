package gdbmi_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Seven ranks of one gdb sent each command at once, as a node sends
// them; a continue of a rank whose process ended is refused.
func TestSharedGDBTogether(t *testing.T) {
	bin := testenv.Examples(t)
	ranks := sharing(t, 8, 16, filepath.Join(bin, "plain"))
	all := func(op string, body any) {
		errs := make(chan error, len(ranks))
		for _, r := range ranks[:7] {
			var raw []byte
			if body != nil {
				raw = wire.MustEncode(body)
			}
			r.b.Do(context.Background(), op, raw, func(_ []byte, err error) { errs <- err })
		}
		for range ranks[:7] {
			select {
			case err := <-errs:
				if err != nil {
					t.Fatalf("%s: %v", op, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no answer", op)
			}
		}
	}
	all(wire.OpBreak, wire.Break{Location: "compute"})
	all(wire.OpRun, nil)
	ranks[7].must(wire.OpRun, nil, nil)
	ranks[7].event(wire.EventExited)
	for _, r := range ranks[:7] {
		r.event(wire.EventStopped)
	}
	if _, err := ranks[7].do(wire.OpCont, nil); err == nil || !strings.Contains(err.Error(), "not being run") {
		t.Fatalf("continue of a rank that ended: %v", err)
	}
	all(wire.OpCont, nil)
	for _, r := range ranks[:7] {
		r.event(wire.EventExited)
	}
	for i, r := range ranks {
		var st wire.State
		r.must(wire.OpStatus, nil, &st)
		if st.State != wire.StateExited {
			t.Errorf("rank %d: %+v", i, st)
		}
	}
}
