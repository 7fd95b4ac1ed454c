package member

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a member's end of a connection and the leader's raw socket.
func pair(t testing.TB) (*Leader, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	return &Leader{fd: fds[0], index: 7}, fds[1]
}

// A leader that answers the join with its admission takes the rank; one
// that refuses is final, and its reason reaches the member.
func TestJoin(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   error
		words  string
	}{
		{"A", nil, ""},
		{"Rserver 3 thinks the job has 4 servers, not 8", ErrRefused, "4 servers, not 8"},
		{"A\x00", ErrProtocol, `answered "A\x00"`},
	} {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			p := make([]byte, MaxPacket)
			n, _ := unix.Read(fds[1], p)
			if index, servers, ok := TwoUvarints(p[1:n]); ok && p[0] == TagJoin && index == 3 && servers == 8 {
				unix.Write(fds[1], []byte(c.answer))
			}
		}()
		l, err := join(fds[0], 3, 8, 5*time.Second)
		unix.Close(fds[1])
		if !errors.Is(err, c.want) || (c.want != nil && !strings.Contains(err.Error(), c.words)) {
			t.Errorf("answer %q: %v, want %v", c.answer, err, c.want)
		}
		if l != nil {
			l.close()
		}
	}
}

// A leader that says nothing is given up after the timeout, which the
// error names.
func TestJoinTimesOut(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	if _, err := join(fds[0], 1, 2, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Fatalf("a silent leader: %v", err)
	}
}

// A member that finds no leader listening gives up when its context
// ends, naming the leader it looked for.
func TestJoinFindsNoLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var key [32]byte
	key[0] = byte(os.Getpid())
	if _, err := Join(ctx, key, 12, 13, 14, time.Second); err == nil || !strings.Contains(err.Error(), "could not reach server 12, this host's first") {
		t.Fatalf("no leader: %v", err)
	}
}

// A leader's quit ends the service without an error, its hang-up with
// one that names it, and a spawn that fails is answered with its reason.
func TestServe(t *testing.T) {
	failed := func() (Spawned, error) { return Spawned{}, errors.New("gdb not found (gdb)") }
	l, peer := pair(t)
	unix.Write(peer, []byte{TagSpawn})
	unix.Write(peer, []byte{TagQuit})
	if err := l.Serve(context.Background(), failed); err != nil {
		t.Fatalf("quit: %v", err)
	}
	p := make([]byte, MaxPacket)
	if n, _ := unix.Read(peer, p); string(p[:n]) != "Fgdb not found (gdb)" {
		t.Fatalf("a failed spawn answered %q", p[:n])
	}
	l, peer = pair(t)
	unix.Shutdown(peer, unix.SHUT_WR)
	if err := l.Serve(context.Background(), failed); !errors.Is(err, ErrLeaderGone) || !strings.Contains(err.Error(), "server 7, which this host's ranks were handed to, is gone") {
		t.Fatalf("hang-up: %v", err)
	}
	l, _ = pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Serve(ctx, failed); err != nil {
		t.Fatalf("the member's own end: %v", err)
	}
}

// Whatever a leader sends, a member serving it ends with an error or
// keeps serving, never a panic or a wait beyond its bound.
func FuzzLeaderPackets(f *testing.F) {
	for _, seed := range []string{"", "S", "Q", "A", "Rno", "s\x07", "x\x01\x09", "SQ", "M\x05\x08"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		l, peer := pair(t)
		unix.Write(peer, p)
		unix.Shutdown(peer, unix.SHUT_WR)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := l.Serve(ctx, func() (Spawned, error) { return Spawned{}, errors.New("no debugger here") })
		if len(p) == 1 && p[0] == TagQuit && err != nil {
			t.Fatalf("quit: %v", err)
		}
	})
}

// gdb starts without PYTHONUNBUFFERED, which would make it write its
// output a byte at a time, and gives it back to its program; a value no
// command line carries stays in gdb's environment.
func TestGDBEnv(t *testing.T) {
	for _, c := range []struct {
		environ, env, kept []string
	}{
		{[]string{"A=1", "PYTHONUNBUFFERED=1", "B=x=y"}, []string{"A=1", "B=x=y"}, []string{"PYTHONUNBUFFERED=1"}},
		{[]string{"PYTHONUNBUFFERED="}, nil, []string{"PYTHONUNBUFFERED="}},
		{[]string{"PYTHONUNBUFFERED=a\nb", "PYTHONUNBUFFEREDX=1"}, []string{"PYTHONUNBUFFERED=a\nb", "PYTHONUNBUFFEREDX=1"}, nil},
		{nil, nil, nil},
	} {
		env, kept := gdbEnv(c.environ)
		if !slices.Equal(env, c.env) || !slices.Equal(kept, c.kept) {
			t.Errorf("gdbEnv(%q) = %q, %q; want %q, %q", c.environ, env, kept, c.env, c.kept)
		}
	}
}
