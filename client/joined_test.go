package client_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// Two jobs joined are one: the second's ranks follow the first's, a
// command to both is split and its answers merged across the jobs, and
// ranks past both are no such rank.
func TestJoinedShiftsAndMerges(t *testing.T) {
	a := ready(t, 3, 0, "hang")      // rank 2 in compute
	b := ready(t, 5, 0, "hang", "1") // rank 1 (joined: 4) in compute
	j := client.NewJoined()
	defer j.Close()
	for i, s := range []*client.Session{a.Session, b.Session} {
		first, err := j.Add(s)
		if want := []int{0, 3}[i]; err != nil || first != want {
			t.Fatalf("job %d joined at %d (%v), want %d", i, first, err, want)
		}
	}
	if j.Size() != 8 {
		t.Fatalf("joined size %d, want 8", j.Size())
	}
	got := describe(command(t, j, wire.All(10), wire.OpWhere, nil))
	if want := "[0-1,3,5-7] ok MPI_Recv; [2,4] ok compute; [8-9] no such rank: ; "; got != want {
		t.Fatalf("where on both jobs: %q, want %q", got, want)
	}
	got = describe(command(t, j, wire.Range(4, 5), wire.OpWhere, nil))
	if want := "[4] ok compute; [5] ok MPI_Recv; "; got != want {
		t.Fatalf("where on the second job's 1-2: %q, want %q", got, want)
	}

	// Events come out with the ranks where their job stands.
	if g := command(t, j, wire.Range(3, 7), wire.OpRun, nil); !okRanks(g).Equal(wire.Range(3, 7)) {
		t.Fatalf("run the second job: %s", describe(g))
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var stopped wire.RankSet
	for !stopped.Equal(wire.Range(3, 7)) {
		ev, err := j.NextEvent(ctx)
		if err != nil {
			t.Fatalf("stopped %v of 3-7: %v", stopped, err)
		}
		if ev.Op == wire.EventStopped || ev.Op == wire.EventRunning {
			if !ev.Group.Ranks.Minus(wire.Range(3, 7)).Empty() {
				t.Fatalf("%s of ranks %v: the second job's ranks are 3-7", ev.Op, ev.Group.Ranks)
			}
		}
		if ev.Op == wire.EventStopped {
			stopped = stopped.Union(ev.Group.Ranks)
		}
	}
}

// A job whose session has ended answers for its ranks with an error; the
// other job answers as before. Close lets the events queued be read, then
// says io.EOF.
func TestJoinedJobEnded(t *testing.T) {
	a := ready(t, 2, 0, "ring")
	b := ready(t, 2, 0, "ring")
	j := client.NewJoined()
	for _, s := range []*client.Session{a.Session, b.Session} {
		if _, err := j.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	b.Session.Close()
	groups := command(t, j, wire.All(4), wire.OpStatus, nil)
	var failed wire.RankSet
	for _, g := range groups {
		if g.Status == wire.StatusError {
			failed = failed.Union(g.Ranks)
		}
	}
	if !failed.Equal(wire.Range(2, 3)) || !okRanks(groups).Equal(wire.Range(0, 1)) {
		t.Fatalf("status with the second job's session closed: %s", describe(groups))
	}
	j.Close()
	select {
	case <-j.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	if _, err := j.Add(a.Session); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}
	drain(t, j)
}

// A relay sends to its current session; after Switch, to the new one,
// and the old session's events are all read before the new one's.
// Between the two, Vacate answers commands with why.
func TestRelaySwitches(t *testing.T) {
	old := ready(t, 3, 0, "ring")
	next := ready(t, 3, 0, "hang")
	r := client.NewRelay(old.Session)
	defer r.Close()
	if got := describe(command(t, r, wire.All(3), wire.OpWhere, nil)); got != "[0] ok MPI_Send; [1-2] ok MPI_Sendrecv; " {
		t.Fatalf("where through the relay: %q", got)
	}
	// The old job stops, and ends: its stops are queued, still to be
	// read, when the relay switches.
	command(t, r, wire.All(3), wire.OpRun, nil)
	command(t, r, wire.All(3), wire.OpHalt, nil)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := old.Session.Quit(ctx, deadline); err != nil {
		t.Fatal(err)
	}

	gone := errors.New("the job is starting again")
	r.Vacate(gone)
	if _, err := r.Command(ctx, wire.All(3), wire.OpStatus, nil, time.Second); !errors.Is(err, gone) {
		t.Fatalf("command while vacant: %v, want %v", err, gone)
	}
	r.Switch(next.Session)
	if r.Session() != next.Session {
		t.Fatal("Switch did not make the new session current")
	}
	if got := describe(command(t, r, wire.All(3), wire.OpWhere, nil)); got != "[0-1] ok MPI_Recv; [2] ok compute; " {
		t.Fatalf("where after the switch: %q", got)
	}
	command(t, r, wire.All(3), wire.OpRun, nil)
	// The stops read through the relay: first the old job's, then the new
	// one's, never the other way round.
	var fromNew int
	var stoppedOld, stoppedNew wire.RankSet
	for !stoppedNew.Equal(wire.All(3)) {
		ev, err := r.NextEvent(ctx)
		if err != nil {
			t.Fatalf("the new job's stops %v: %v", stoppedNew, err)
		}
		if ev.Op != wire.EventStopped {
			continue
		}
		var st wire.State
		if err := wire.Decode(ev.Group.Body, &st); err != nil {
			t.Fatal(err)
		}
		switch st.Frame.File {
		case "ring.c", "send.c", "sendrecv.c":
			if fromNew > 0 {
				t.Fatalf("a stop of the old job after %d of the new one's", fromNew)
			}
			stoppedOld = stoppedOld.Union(ev.Group.Ranks)
		default:
			fromNew++
			stoppedNew = stoppedNew.Union(ev.Group.Ranks)
		}
	}
	if !stoppedOld.Equal(wire.All(3)) {
		t.Errorf("the old job's stops read through the relay: %v, want all three", stoppedOld)
	}
	r.Close()
	drain(t, r)
}

// drain reads the events left until io.EOF, which must come.
func drain(t *testing.T, q interface {
	NextEvent(context.Context) (client.Event, error)
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		_, err := q.NextEvent(ctx)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("events after the end: %v, want io.EOF", err)
		}
	}
}
