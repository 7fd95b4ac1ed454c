package exit

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"
)

func TestStatusIsTheCodeTheErrorCarries(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("plain"), 1},
		{Usage(errors.New("bad flag")), 2},
		{fmt.Errorf("wrapped: %w", Usage(errors.New("bad flag"))), 2},
		{Killed(syscall.SIGTERM, nil), 143},
	} {
		if got := Status(c.err); got != c.want {
			t.Errorf("Status(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if msg := Killed(syscall.SIGINT, nil).Error(); msg != "" {
		t.Errorf("an exit status without an error says %q, want nothing", msg)
	}
}

// A signal ends the context with itself as the cause, and a session cut
// short by it ends as a process killed by it would.
func TestASignalEndsTheContextAndGivesItsStatus(t *testing.T) {
	ctx, stop := Signalled(syscall.SIGUSR1)
	defer stop()
	if err := EndedBy(ctx, nil); err != nil {
		t.Fatalf("before any signal: EndedBy = %v, want nil", err)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGUSR1 did not end the context within 10s")
	}
	if sig, ok := Signal(ctx); !ok || sig != syscall.SIGUSR1 {
		t.Fatalf("Signal = %v, %v; want SIGUSR1", sig, ok)
	}
	err := EndedBy(ctx, errors.New("rank 3 did not stop"))
	if Status(err) != 128+int(syscall.SIGUSR1) || err.Error() != "user defined signal 1 (SIGUSR1): ending the session's job: rank 3 did not stop" {
		t.Errorf("EndedBy = %q, status %d", err, Status(err))
	}
	if err := EndedBy(ctx, nil); err.Error() != "user defined signal 1 (SIGUSR1): ended the session's job" {
		t.Errorf("EndedBy without an end error = %q", err)
	}
}

func TestStopLeavesAContextThatNoSignalEnded(t *testing.T) {
	ctx, stop := Signalled(syscall.SIGUSR2)
	stop()
	if ctx.Err() == nil {
		t.Error("stop left the context running")
	}
	if _, ok := Signal(ctx); ok {
		t.Error("Signal names a signal that never came")
	}
	if EndedBy(ctx, nil) != nil {
		t.Error("EndedBy gives a status to a context that no signal ended")
	}
}

func TestQuietWhenTheContextEnded(t *testing.T) {
	failed := errors.New("link lost")
	ctx, cancel := context.WithCancel(context.Background())
	if Quiet(ctx, failed) != failed {
		t.Error("Quiet hid the error of a running command")
	}
	cancel()
	if err := Quiet(ctx, failed); err != nil {
		t.Errorf("Quiet = %v after the context ended, want nil", err)
	}
}
