package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

func do(t *testing.T, s *Sim, op string, body []byte) (wire.State, error) {
	t.Helper()
	var st wire.State
	ch := make(chan error, 1)
	s.Do(context.Background(), op, body, func(b []byte, err error) {
		if err == nil && op != wire.OpWhere {
			err = wire.Decode(b, &st)
		}
		ch <- err
	})
	return st, <-ch
}

func TestLifecycle(t *testing.T) {
	s := New(backend.Config{Rank: 7, Size: 8})
	defer s.Close()
	if _, err := do(t, s, wire.OpWhere, nil); err == nil {
		t.Fatal("where before start answered")
	}
	st, err := do(t, s, wire.OpStart, wire.MustEncode(wire.Start{Program: "hang"}))
	if err != nil || st.State != wire.StateStopped || st.Frame.Func != "compute" {
		t.Fatalf("start: %+v %v", st, err)
	}
	if st, err = do(t, s, wire.OpRun, nil); err != nil || st.State != wire.StateRunning {
		t.Fatalf("continue: %+v %v", st, err)
	}
	want := []string{wire.EventRunning, wire.EventStopped}
	for _, op := range want {
		select {
		case ev := <-s.Events():
			if ev.Op != op {
				t.Fatalf("event %s, want %s", ev.Op, op)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s event", op)
		}
	}
	if st, err = do(t, s, wire.OpKill, nil); err != nil || st.State != wire.StateExited {
		t.Fatalf("kill: %+v %v", st, err)
	}
	if _, err = do(t, s, wire.OpKill, nil); err == nil {
		t.Fatal("killed twice")
	}
	if _, err = do(t, s, "frobnicate", nil); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("unknown op: %v", err)
	}
}

func TestScenarios(t *testing.T) {
	for _, tc := range []struct {
		program string
		args    []string
		rank    int
		top     string
		err     string
	}{
		{"ring", nil, 0, "MPI_Send", ""},
		{"", nil, 3, "MPI_Sendrecv", ""},
		{"hang", []string{"2"}, 2, "compute", ""},
		{"hang", nil, 2, "MPI_Recv", ""},
		{"groups", []string{"3", "5"}, 4, "work_1_4", ""},
		{"groups", []string{"x"}, 0, "", "not a non-negative number"},
		{"groups", []string{"0"}, 0, "", "want K >= 1"},
		{"bogus", nil, 0, "", "no simulated program"},
	} {
		frames, err := Scenario(tc.program, tc.args, tc.rank, 8)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %v: %v, want %q", tc.program, tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || frames[0].Func != tc.top || frames[len(frames)-1].Func != "main" {
			t.Errorf("%s %v rank %d: %v %v", tc.program, tc.args, tc.rank, frames, err)
		}
	}
}
