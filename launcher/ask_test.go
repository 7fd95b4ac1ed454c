package launcher

import (
	"context"
	"errors"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/connect"
)

func newAsk(t *testing.T, wait time.Duration) (Ask, *strings.Builder) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "requests")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	req, err := connect.NewRequest([]string{"./plain"}, connect.Plan{Mode: connect.ModeMPIR, Program: []string{"./plain"}})
	if err != nil {
		t.Fatal(err)
	}
	said := new(strings.Builder)
	return Ask{Dir: dir, Request: req, Wait: wait, ConnectTimeout: time.Second, Log: log.New(said, "", 0)}, said
}

// requestGone says whether the request's file is gone.
func requestGone(t *testing.T, a Ask) bool {
	reqs, _, err := connect.Requests(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(reqs) == 0
}

func TestAskUnansweredIsDeleted(t *testing.T) {
	a, said := newAsk(t, 50*time.Millisecond)
	accepted, err := a.Run(context.Background())
	if accepted || !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), a.Request.ID) {
		t.Errorf("unanswered request: accepted %v, error %v; want ErrNoAnswer naming %s", accepted, err, a.Request.ID)
	}
	if !requestGone(t, a) {
		t.Error("the unanswered request was left behind")
	}
	if !strings.Contains(said.String(), "sdm listen --accept "+a.Request.ID) {
		t.Errorf("said %q: want how to accept the request", said.String())
	}
}

// saidTo tells each line logged to a channel.
type saidTo chan string

func (s saidTo) Write(p []byte) (int, error) { s <- string(p); return len(p), nil }

func TestAskRejectedSaysWhy(t *testing.T) {
	a, _ := newAsk(t, 0)
	said := make(saidTo, 4)
	a.Log = log.New(said, "", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx)
		done <- err
	}()
	// The request is written before its wait is announced.
	select {
	case <-said:
	case <-ctx.Done():
		t.Fatal("the wait was not announced within 20s")
	}
	if err := connect.Reply(a.Dir, a.Request, connect.Answer{Reason: "not today"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "rejected: not today") {
		t.Errorf("rejected request ended with %v: want the reason", err)
	}
	if !requestGone(t, a) {
		t.Error("the rejected request was left behind")
	}
}

func TestAskCancelledReturnsTheCause(t *testing.T) {
	a, _ := newAsk(t, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	stopped := errors.New("stopped by the user")
	cancel(stopped)
	accepted, err := a.Run(ctx)
	if accepted || !errors.Is(err, stopped) {
		t.Errorf("cancelled ask: accepted %v, error %v; want the cause", accepted, err)
	}
	if !requestGone(t, a) {
		t.Error("the cancelled request was left behind")
	}
}
