package launcher

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/connect"
)

func requestIn(t *testing.T, dir string) *connect.Request {
	t.Helper()
	r, err := connect.NewRequest([]string{"./plain"}, connect.Plan{Mode: "process", RM: "local", Size: 1, Program: []string{"./plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	return r
}

func connectDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "connect")
	if err := connect.Secure(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Each request is offered once; a listener with a deadline says where it
// waited in vain.
func TestListenerOffersEachRequestOnce(t *testing.T) {
	dir := connectDir(t)
	r := requestIn(t, dir)
	l := &Listener{Dir: dir, Deadline: time.Now().Add(200 * time.Millisecond)}
	reqs, err := l.Next(context.Background())
	if err != nil || len(reqs) != 1 || reqs[0].ID != r.ID {
		t.Fatalf("Next: %v %v, want request %s", reqs, err, r.ID)
	}
	reqs, err = l.Next(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no request came in "+dir) {
		t.Fatalf("second Next: %v %v, want no request came in %s", reqs, err, dir)
	}
}

func TestListenerRejectReachesTheJob(t *testing.T) {
	dir := connectDir(t)
	r := requestIn(t, dir)
	l := &Listener{Dir: dir}
	if err := l.Reject(r, "not now"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := connect.WaitAnswer(ctx, dir, r)
	if err != nil || a.Accept || a.Reason != "not now" {
		t.Fatalf("the job side read %+v, %v; want a rejection saying why", a, err)
	}
}

// A request gone (its job stopped waiting) cannot be taken: the job side
// is not there to start anything.
func TestListenerTakeOfAGoneRequest(t *testing.T) {
	dir := connectDir(t)
	r := requestIn(t, dir)
	r.Remove(dir)
	l := &Listener{Dir: dir, ConnectTimeout: time.Second}
	_, _, err := l.Take(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("got %v, want request is gone", err)
	}
}
