package launcher

import (
	"bytes"
	"context"
	"errors"
	"log"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/connect"
)

func TestMatchesByTheStartOfTheID(t *testing.T) {
	if !Matches("3f9c01ab", "3f9c") || !Matches("3f9c01ab", "3f9c01ab") || Matches("3f9c01ab", "3f9d") {
		t.Error("Matches: want a request named by the start of its ID, and only so")
	}
}

func TestRejectNamedAnswersOnlyThatRequest(t *testing.T) {
	dir := connectDir(t)
	other, r := requestIn(t, dir), requestIn(t, dir)
	var logged bytes.Buffer
	l := &Listener{Dir: dir, Log: log.New(&logged, "", 0), Deadline: time.Now().Add(5 * time.Second)}
	if err := l.RejectNamed(context.Background(), r.ID[:6], "not now"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a, err := connect.WaitAnswer(ctx, dir, r); err != nil || a.Accept || a.Reason != "not now" {
		t.Errorf("the job read %+v, %v; want a rejection saying why", a, err)
	}
	if logged.String() != "rejected "+r.String()+"\n" {
		t.Errorf("logged %q, want rejected %s", logged.String(), r)
	}
	short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	if _, err := connect.WaitAnswer(short, dir, other); err == nil {
		t.Error("the other request was answered too")
	}
}

// Serve goes on after a failed session, stops after max, and says that
// some failed.
func TestServeGoesOnAfterAFailedSession(t *testing.T) {
	dir := connectDir(t)
	first, second, third := requestIn(t, dir), requestIn(t, dir), requestIn(t, dir)
	var logged bytes.Buffer
	l := &Listener{Dir: dir, Log: log.New(&logged, "", 0), Deadline: time.Now().Add(5 * time.Second)}
	var debugged []string
	pick := func(r *connect.Request) (bool, error) { return r.ID != second.ID, nil }
	debug := func(_ context.Context, r *connect.Request) error {
		debugged = append(debugged, r.ID)
		if r.ID == first.ID {
			return errors.New("it broke")
		}
		return nil
	}
	err := l.Serve(context.Background(), 2, pick, debug)
	if !errors.Is(err, ErrSessionsFailed) {
		t.Errorf("Serve: %v, want %v", err, ErrSessionsFailed)
	}
	if len(debugged) != 2 || !slices.Contains(debugged, first.ID) || !slices.Contains(debugged, third.ID) {
		t.Errorf("debugged %v, want %s and %s", debugged, first.ID, third.ID)
	}
	if !strings.Contains(logged.String(), "request "+first.ID+": it broke") {
		t.Errorf("logged %q, want the failed request named", logged.String())
	}
}

// A pick that fails (nobody to ask) ends Serve with its error.
func TestServeEndsWhenPickFails(t *testing.T) {
	dir := connectDir(t)
	requestIn(t, dir)
	l := &Listener{Dir: dir, Deadline: time.Now().Add(5 * time.Second)}
	noAnswer := errors.New("no answer: EOF")
	pick := func(*connect.Request) (bool, error) { return false, noAnswer }
	err := l.Serve(context.Background(), 0, pick, func(context.Context, *connect.Request) error { return nil })
	if !errors.Is(err, noAnswer) {
		t.Errorf("Serve: %v, want %v", err, noAnswer)
	}
}
