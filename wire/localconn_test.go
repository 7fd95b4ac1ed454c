package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// connPair is two localConns over a socket pair, with limit as their
// silence limit.
func connPair(t *testing.T, limit time.Duration) (*localConn, *localConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]*localConn
	for i, fd := range fds {
		if conns[i], err = newLocalConn(fd, nil, nil, new(atomic.Int64), limit); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conns[i].Close() })
	}
	return conns[0], conns[1]
}

// pollers returns, for every epoll instance of this process, the events
// it watches each descriptor for.
func pollers(t *testing.T) []map[int]uint32 {
	t.Helper()
	infos, err := filepath.Glob("/proc/self/fdinfo/*")
	if err != nil {
		t.Fatal(err)
	}
	var all []map[int]uint32
	for _, info := range infos {
		f, err := os.Open(info)
		if err != nil {
			continue // a descriptor closed meanwhile, the glob's own
		}
		watched := map[int]uint32{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var fd int
			var events uint32
			if _, err := fmt.Sscanf(sc.Text(), "tfd: %d events: %x", &fd, &events); err == nil {
				watched[fd] = events
			}
		}
		f.Close()
		if len(watched) > 0 {
			all = append(all, watched)
		}
	}
	return all
}

func TestLocalSocketsAreWatchedForInputOnly(t *testing.T) {
	a, b := localPair(t)
	for _, l := range []*Link{a, b} {
		for i, st := range l.streams {
			var fd int
			st.(*localConn).sockRaw.Control(func(s uintptr) { fd = int(s) })
			var found []uint32
			for _, watched := range pollers(t) {
				if ev, ok := watched[fd]; ok {
					found = append(found, ev)
				}
			}
			// Watched for room to write, the socket would wake its
			// process each time the peer read what it wrote.
			if len(found) != 1 || found[0]&unix.EPOLLIN == 0 || found[0]&unix.EPOLLOUT != 0 {
				t.Errorf("stream %d (fd %d) is watched by %d epoll instances, for events %#x; want one, for input only", i, fd, len(found), found)
			}
		}
	}
}

func TestLocalConnWaitsForRoom(t *testing.T) {
	a, b := connPair(t, 10*time.Second)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // far beyond a socket's buffer
	wrote := make(chan error, 1)
	go func() {
		n, err := a.Write(big)
		if err == nil && n != len(big) {
			err = fmt.Errorf("wrote %d of %d bytes", n, len(big))
		}
		wrote <- err
	}()
	got := make([]byte, len(big))
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("the bytes read are not the bytes written")
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not return once everything was read")
	}
	// Once the write is done, nothing watches for room any more.
	var fd int
	a.sockRaw.Control(func(s uintptr) { fd = int(s) })
	for _, watched := range pollers(t) {
		if ev, ok := watched[fd]; ok && ev&unix.EPOLLOUT != 0 {
			t.Errorf("after the write, the socket is still watched for room (events %#x)", ev)
		}
	}
}

// threads is the number of threads of this process.
func threads(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, line := range strings.Split(string(status), "\n") {
		if _, err := fmt.Sscanf(line, "Threads: %d", &n); err == nil {
			return n
		}
	}
	t.Fatal("no thread count in /proc/self/status")
	return 0
}

func TestLocalConnWaitsForRoomWithoutAThread(t *testing.T) {
	// A leader whose members are all stopped has a write waiting on each
	// link: a thousand of them must not hold a thousand threads.
	const waiting = 64
	before := threads(t)
	started := make(chan struct{}, waiting)
	var conns []*localConn
	for range waiting {
		a, _ := connPair(t, time.Minute)
		conns = append(conns, a)
		go func() {
			started <- struct{}{}
			a.Write(make([]byte, 8<<20))
		}()
	}
	for range waiting {
		<-started
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		blocked := 0
		for _, a := range conns {
			a.mu.Lock()
			if a.room != nil {
				blocked++
			}
			a.mu.Unlock()
		}
		if blocked == waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d writes are waiting for room after 10 s", blocked, waiting)
		}
		time.Sleep(10 * time.Millisecond) // polling a state, with a deadline
	}
	if now := threads(t); now-before > waiting/4 {
		t.Fatalf("%d writes waiting for room took %d threads more (%d, then %d)", waiting, now-before, before, now)
	}
}

func TestLocalConnWriteGivesUpAtTheLimit(t *testing.T) {
	const limit = 300 * time.Millisecond
	a, _ := connPair(t, limit)
	start := time.Now()
	n, err := a.Write(make([]byte, 8<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 8<<20 {
		t.Fatalf("a write nobody reads: %d bytes, %v; want a deadline error", n, err)
	}
	if d := time.Since(start); d < limit || d > limit+5*time.Second {
		t.Fatalf("the write gave up after %v, its limit being %v", d, limit)
	}
	if !strings.Contains(err.Error(), "read nothing") {
		t.Errorf("error %q does not say why", err)
	}
}

func TestLocalConnCloseEndsWaits(t *testing.T) {
	a, _ := connPair(t, time.Minute)
	read := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 10))
		read <- err
	}()
	wrote := make(chan error, 1)
	go func() {
		_, err := a.Write(make([]byte, 8<<20))
		wrote <- err
	}()
	// Both are waiting, or about to: closing must end either wait.
	a.Close()
	for what, ch := range map[string]chan error{"read": read, "write": wrote} {
		select {
		case err := <-ch:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("%s after close: %v, want net.ErrClosed", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a waiting %s did not return when the connection closed", what)
		}
	}
}

func TestLocalConnPeerClosed(t *testing.T) {
	a, b := connPair(t, time.Minute)
	if _, err := b.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	got, err := io.ReadAll(a)
	if err != nil || string(got) != "last" {
		t.Fatalf("read %q, %v; want what the peer wrote, then the end", got, err)
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Fatal("a write to a closed peer succeeded")
	}
}
