package program

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// newTestOutput is an output pump without a terminal: the test feeds it
// what a read would get, and reads what it sends up from events.
func newTestOutput() (*Output, chan backend.Event) {
	events := make(chan backend.Event, 64)
	return &Output{sink: testSink(events), freed: make(chan struct{}, 1), done: make(chan struct{})}, events
}

// testSink sends every event to its channel; it has no program.
type testSink chan backend.Event

func (s testSink) Send(ev backend.Event) bool { s <- ev; return true }
func (s testSink) PID() int                   { return 0 }

func text(t *testing.T, ev backend.Event) string {
	t.Helper()
	var o wire.Output
	if err := wire.Decode(ev.Body, &o); err != nil {
		t.Fatal(err)
	}
	return o.Text
}

// A line that keeps arriving in pieces, each within the quiet spell of
// the one before, goes up whole however long it takes in all.
func TestLineArrivingSlowlyStaysWhole(t *testing.T) {
	o, events := newTestOutput()
	pieces := []string{"a long ", "line ", "written ", "slowly ", "in ", "pieces"}
	for _, p := range pieces {
		o.add([]byte(p))
		// The program is slow, not the pump: 3 pieces a quiet spell.
		select {
		case ev := <-events:
			t.Fatalf("%q went up while the line was still arriving", text(t, ev))
		case <-time.After(partialWait / 3):
		}
	}
	o.add([]byte("\n"))
	select {
	case ev := <-events:
		if got, want := text(t, ev), strings.Join(pieces, "")+"\n"; got != want {
			t.Fatalf("went up as %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the line never went up")
	}
}

// A line without an end goes up after a quiet spell; one longer than
// maxLine goes up in pieces of maxLine at once.
func TestLineWithoutEnd(t *testing.T) {
	o, events := newTestOutput()
	o.add([]byte("prompt> "))
	select {
	case ev := <-events:
		if got := text(t, ev); got != "prompt> " {
			t.Fatalf("went up as %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a line without an end never went up")
	}
	o.add([]byte(strings.Repeat("x", 2*maxLine+10)))
	for i := range 2 {
		select {
		case ev := <-events:
			if n := len(text(t, ev)); n != maxLine {
				t.Fatalf("piece %d of a long line is %d bytes, want %d", i, n, maxLine)
			}
		default:
			t.Fatalf("piece %d of a line longer than %d bytes did not go up at once", i, maxLine)
		}
	}
	o.flush()
	if n := len(text(t, <-events)); n != 10 {
		t.Fatalf("the rest of the long line is %d bytes, want 10", n)
	}
}

// The pump takes no more credit than outputCredit: it waits until the
// node has passed output on, and a closing backend ends the wait.
func TestOutputCredit(t *testing.T) {
	o, events := newTestOutput()
	o.add([]byte(strings.Repeat("y", outputCredit-1) + "\n"))
	ev := <-events
	got := make(chan bool, 1)
	go func() { got <- o.credit() }()
	select {
	case <-got:
		t.Fatal("the pump went on with its credit spent")
	case <-time.After(partialWait):
	}
	ev.Sent()
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("credit failed after it was given back")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the pump did not go on once the output was passed on")
	}
	o.add([]byte(strings.Repeat("z", outputCredit-1) + "\n"))
	<-events
	go func() { got <- o.credit() }()
	o.Stop()
	select {
	case ok := <-got:
		if ok {
			t.Fatal("credit succeeded without any given back")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not end the wait for credit")
	}
}

// A line without an end waits longer while the program could still be
// writing it: a runnable thread is not a quiet terminal.
func TestRunnableIsNotQuiet(t *testing.T) {
	// The thread that reads the states is running while it does, as long
	// as the reading goroutine does not move to another thread meanwhile.
	runtime.LockOSThread()
	self := runnable(os.Getpid())
	runtime.UnlockOSThread()
	if !self {
		t.Error("this test's own process, which runs, is not runnable")
	}
	sleeper := testenv.Command(t, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runnable(sleeper.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("a sleeping process still runnable after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if runnable(1 << 30) {
		t.Error("a process that does not exist is runnable")
	}
}
