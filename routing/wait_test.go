package routing

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// These tests change package variables, so none of them runs in parallel.

// setWait sets the poll interval and inotify switch for one test, and
// returns a channel that receives the error Wait saw each time it blocks.
func setWait(t *testing.T, poll time.Duration, inotify bool) <-chan error {
	t.Helper()
	oldPoll, oldInotify, oldHook := pollInterval, useInotify, beforeBlock
	t.Cleanup(func() { pollInterval, useInotify, beforeBlock = oldPoll, oldInotify, oldHook })
	blocked := make(chan error, 1000)
	pollInterval, useInotify = poll, inotify
	beforeBlock = func(err error) {
		select {
		case blocked <- err:
		default:
		}
	}
	return blocked
}

type result struct {
	tab *Table
	err error
}

func startWait(ctx context.Context, path string) <-chan result {
	done := make(chan result, 1)
	go func() {
		tab, err := Wait(ctx, path)
		done <- result{tab, err}
	}()
	return done
}

// awaitBlocked returns once Wait has blocked after seeing an error that
// satisfies is.
func awaitBlocked(t *testing.T, blocked <-chan error, is func(error) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case err := <-blocked:
			if is(err) {
				return
			}
		case <-timeout:
			t.Fatal("Wait never blocked")
		}
	}
}

func notExist(err error) bool   { return errors.Is(err, fs.ErrNotExist) }
func incomplete(err error) bool { return errors.Is(err, ErrIncomplete) }

func table(t *testing.T, n int) *Table {
	t.Helper()
	var es []Entry
	for i := range n {
		es = append(es, Entry{Index: i, Host: "localhost", Port: 5000 + i})
	}
	tab, err := NewTable(es)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func await(t *testing.T, done <-chan result, within time.Duration) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(within):
		t.Fatalf("Wait did not return within %v", within)
		return result{}
	}
}

func TestWaitExisting(t *testing.T) {
	setWait(t, time.Hour, true)
	path := filepath.Join(t.TempDir(), "routes")
	if err := writeFile(path, table(t, 3)); err != nil {
		t.Fatal(err)
	}
	tab, err := Wait(context.Background(), path)
	if err != nil || tab.Size() != 3 {
		t.Fatalf("Wait = %v, %v", tab, err)
	}
}

// With the poll interval set to an hour, only inotify can wake Wait in time.
func TestWaitWriteFile(t *testing.T) {
	blocked := setWait(t, time.Hour, true)
	path := filepath.Join(t.TempDir(), "routes")
	done := startWait(context.Background(), path)
	awaitBlocked(t, blocked, notExist)
	want := table(t, 4)
	if err := writeFile(path, want); err != nil {
		t.Fatal(err)
	}
	r := await(t, done, 5*time.Second)
	if r.err != nil || r.tab.Size() != 4 {
		t.Fatalf("Wait = %v, %v", r.tab, r.err)
	}
}

// An in-place writer: header first, then entries in two appends, the first
// of which cuts a line in half.
func TestWaitTwoSteps(t *testing.T) {
	for _, inotify := range []bool{true, false} {
		t.Run(map[bool]string{true: "inotify", false: "poll"}[inotify], func(t *testing.T) {
			poll := time.Hour
			if !inotify {
				poll = 5 * time.Millisecond
			}
			blocked := setWait(t, poll, inotify)
			path := filepath.Join(t.TempDir(), "routes")
			done := startWait(context.Background(), path)
			awaitBlocked(t, blocked, notExist)
			if err := os.WriteFile(path, []byte("3\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			awaitBlocked(t, blocked, incomplete)
			appendFile(t, path, "0 localhost 5000\n1 local")
			awaitBlocked(t, blocked, func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "has 1 of 3 entries (line 3 is partly written)")
			})
			appendFile(t, path, "host 5001\n2 localhost 5002\n")
			r := await(t, done, 5*time.Second)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if e, _ := r.tab.Lookup(1); e.Host != "localhost" || r.tab.Size() != 3 {
				t.Fatalf("got %v", r.tab.Entries)
			}
		})
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWaitDeadlineMissing(t *testing.T) {
	setWait(t, time.Hour, true)
	path := filepath.Join(t.TempDir(), "routes")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Wait(ctx, path)
	if time.Since(start) > 5*time.Second {
		t.Errorf("Wait overran its deadline: %v", time.Since(start))
	}
	want := "waiting for routing file " + path + ": context deadline exceeded: file does not exist"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant %s", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not match DeadlineExceeded and ErrNotExist", err)
	}
}

// The short poll interval also has the poll time out repeatedly while
// inotify has nothing to report.
func TestWaitDeadlineIncomplete(t *testing.T) {
	setWait(t, 5*time.Millisecond, true)
	path := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(path, []byte("8\n0 a 1\n1 a 1\n2 a 1\n3 a 1\n4 a 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Wait(ctx, path)
	want := "waiting for routing file " + path + ": context deadline exceeded: has 5 of 8 entries"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrIncomplete) {
		t.Errorf("error %v does not match ErrIncomplete", err)
	}
}

// Cancelling a context without deadline must interrupt the poll at once,
// not at the next poll tick an hour later.
func TestWaitCancel(t *testing.T) {
	blocked := setWait(t, time.Hour, true)
	path := filepath.Join(t.TempDir(), "routes")
	ctx, cancel := context.WithCancel(context.Background())
	done := startWait(ctx, path)
	awaitBlocked(t, blocked, notExist)
	cancel()
	r := await(t, done, 5*time.Second)
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", r.err)
	}
}

func TestWaitEmptyPath(t *testing.T) {
	if _, err := Wait(context.Background(), ""); err == nil {
		t.Fatal("Wait accepted an empty path")
	}
}

func TestWaitMalformed(t *testing.T) {
	setWait(t, time.Hour, true)
	path := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(path, []byte("2\n0 a 1\n0 a 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Wait(context.Background(), path)
	if want := path + ":3: duplicate index 0 (first on line 2)"; err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

// A file that turns out malformed while Wait waits ends the wait.
func TestWaitBecomesMalformed(t *testing.T) {
	blocked := setWait(t, time.Hour, true)
	path := filepath.Join(t.TempDir(), "routes")
	done := startWait(context.Background(), path)
	awaitBlocked(t, blocked, notExist)
	if err := os.WriteFile(path, []byte("1\n0 a 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := await(t, done, 5*time.Second)
	if r.err == nil || !strings.Contains(r.err.Error(), ":2: port 0 out of range") {
		t.Fatalf("error = %v", r.err)
	}
}

func TestWaitPollOnly(t *testing.T) {
	blocked := setWait(t, 5*time.Millisecond, false)
	path := filepath.Join(t.TempDir(), "routes")
	done := startWait(context.Background(), path)
	awaitBlocked(t, blocked, notExist)
	if err := writeFile(path, table(t, 2)); err != nil {
		t.Fatal(err)
	}
	if r := await(t, done, 5*time.Second); r.err != nil {
		t.Fatal(r.err)
	}
}

// Without its directory there is nothing to watch; Wait falls back to
// polling and still sees the file once the directory appears.
func TestWaitMissingDirectory(t *testing.T) {
	blocked := setWait(t, 5*time.Millisecond, true)
	dir := filepath.Join(t.TempDir(), "later")
	path := filepath.Join(dir, "routes")
	done := startWait(context.Background(), path)
	awaitBlocked(t, blocked, notExist)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(path, table(t, 2)); err != nil {
		t.Fatal(err)
	}
	if r := await(t, done, 5*time.Second); r.err != nil {
		t.Fatal(r.err)
	}
}

// Removing the watched directory while Wait waits makes it fall back to
// polling.
func TestWaitDirectoryRemoved(t *testing.T) {
	blocked := setWait(t, 5*time.Millisecond, true)
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "routes")
	done := startWait(context.Background(), path)
	awaitBlocked(t, blocked, notExist)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	awaitBlocked(t, blocked, notExist)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(path, table(t, 1)); err != nil {
		t.Fatal(err)
	}
	if r := await(t, done, 5*time.Second); r.err != nil {
		t.Fatal(r.err)
	}
}

// Wait must leave neither descriptors nor goroutines behind, whichever way
// it ends.
func TestWaitNoLeaks(t *testing.T) {
	blocked := setWait(t, time.Hour, true)
	dir := t.TempDir()
	fdsBefore := openFDs(t)
	goBefore := runtime.NumGoroutine()
	for i := range 20 {
		path := filepath.Join(dir, "routes")
		os.Remove(path)
		ctx, cancel := context.WithCancel(context.Background())
		done := startWait(ctx, path)
		awaitBlocked(t, blocked, notExist)
		if i%2 == 0 {
			cancel()
		} else if err := writeFile(path, table(t, 1)); err != nil {
			t.Fatal(err)
		}
		await(t, done, 5*time.Second)
		cancel()
	}
	// Goroutines finish asynchronously after sending their result; give
	// them a moment, but do not wait for a fixed time.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goBefore && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goBefore {
		t.Errorf("%d goroutines before, %d after", goBefore, n)
	}
	if fdsAfter := openFDs(t); fdsAfter != fdsBefore {
		t.Errorf("%d open descriptors before, %d after", fdsBefore, fdsAfter)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(des)
}
