package connect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The two steps of an MPIR job: the job side posts the attach command,
// the front end reads it once and answers with its verdict.
func TestAttachAndRelease(t *testing.T) {
	dir, r := newDir(t), plain(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := PostAttach(dir, r, []byte("table")); err != nil {
		t.Fatal(err)
	}
	body, err := WaitAttach(ctx, dir, r)
	if err != nil || string(body) != "table" {
		t.Fatalf("WaitAttach: %q %v", body, err)
	}
	if _, err := os.Stat(filepath.Join(dir, r.ID+".attach")); !os.IsNotExist(err) {
		t.Errorf("the attach file stayed after it was read: %v", err)
	}
	if err := PostRelease(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	if err := WaitRelease(ctx, dir, r); err != nil {
		t.Fatalf("a release of attached ranks: %v", err)
	}
}

func TestReleaseRefusedSaysWhy(t *testing.T) {
	dir, r := newDir(t), plain(t)
	if err := PostRelease(dir, r, errors.New("ranks 2 could not attach: error: ptrace: Operation not permitted")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := WaitRelease(ctx, dir, r)
	if err == nil || !strings.Contains(err.Error(), "could not attach the ranks: ranks 2 could not attach") {
		t.Fatalf("got %v, want the front end's reason", err)
	}
}

func TestWaitsSayWhatTheyWaitedFor(t *testing.T) {
	dir, r := newDir(t), plain(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := WaitAttach(ctx, dir, r); err == nil || !strings.Contains(err.Error(), "sent no table") || !strings.Contains(err.Error(), r.ID+".attach") {
		t.Errorf("WaitAttach: %v", err)
	}
	if err := WaitRelease(ctx, dir, r); err == nil || !strings.Contains(err.Error(), "did not attach") {
		t.Errorf("WaitRelease: %v", err)
	}
}

func TestFailReachesTheFrontEnd(t *testing.T) {
	dir, r := newDir(t), plain(t)
	if err := Fail(dir, r, errors.New("srun: no allocation")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := WaitFailed(ctx, dir, r); err == nil || err.Error() != "srun: no allocation" {
		t.Fatalf("got %v", err)
	}
	cancel()
	if err := WaitFailed(ctx, dir, r); err != nil {
		t.Fatalf("a wait ended by its context: %v, want nil", err)
	}
}
