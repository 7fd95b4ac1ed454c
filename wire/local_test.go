package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/member"
)

// localPair is a local link's two ends over an abstract Unix socket.
func localPair(tb testing.TB) (*Link, *Link) {
	tb.Helper()
	ln, err := net.ListenUnix("unix", LocalAddress(testKey(tb, 1), os.Getpid()))
	if err != nil {
		tb.Fatal(err)
	}
	return pairOn(tb, ln, func(c net.Conn, dialer bool) (*Link, error) { return NewLocalLink(c, dialer, LinkConfig{}) })
}

func TestLocalLink(t *testing.T) {
	a, b := localPair(t)
	if err := a.Send(&Message{Kind: KindCommand, ID: 7, Op: "status", Ranks: Single(3), Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	m, err := b.Recv()
	if err != nil || m.ID != 7 || m.Op != "status" || !m.Ranks.Equal(Single(3)) {
		t.Fatalf("got %+v, %v", m, err)
	}
	if err := a.SendOutput(&Message{Kind: KindEvent, Op: EventOutput}); err != nil {
		t.Fatal(err)
	}
	if m, err := b.RecvOutput(); err != nil || m.Op != EventOutput {
		t.Fatalf("output: %+v, %v", m, err)
	}
	if s := b.Silence(); s > time.Second {
		t.Errorf("silence %v right after a message", s)
	}
	a.Close()
	if _, err := b.Recv(); err == nil {
		t.Fatal("read from a closed peer succeeded")
	}
}

func TestLocalLinkRefusesTCP(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	if _, err := NewLocalLink(a, true, LinkConfig{}); !errors.Is(err, ErrAuth) {
		t.Fatalf("a local link over a pipe: %v, want ErrAuth", err)
	}
}

// A process of another user that reaches the socket is refused.
func TestLocalLinkRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	addr := LocalAddress(testKey(t, 2), os.Getpid())
	ln, err := net.ListenUnix("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The test binary under another user (TestMain), dialling and then
	// waiting for this end to hang up.
	asNobody(t, "SDM_WIRE_DIAL="+addr.Name)
	ln.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewLocalLink(c, false, LinkConfig{})
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("a peer of uid 65534: %v, want ErrAuth naming its uid", err)
	}
}

// asNobody runs this test binary as user nobody (uid 65534) with env
// added, copied where that user may run it, until the test ends, and
// returns its standard output; the test needs root.
func asNobody(t *testing.T, env string) io.Reader {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	dir, err := os.MkdirTemp("", "sdm-wire-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "wire.test")
	data, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(bin, data, 0o755)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return out
}

// TestMain is also the helper of the tests that run it as another user
// (asNobody) and of TestLocalLinkWithFilesFull.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SDM_WIRE_SQUAT"); addr != "" {
		// A leader's socket taken by another user: it takes one peer and
		// waits for it to hang up.
		if ln, err := net.Listen("unixpacket", addr); err == nil {
			fmt.Println("listening")
			if c, err := ln.Accept(); err == nil {
				c.SetReadDeadline(time.Now().Add(30 * time.Second))
				c.Read(make([]byte, member.MaxPacket))
			}
		}
		os.Exit(0)
	}
	if addr := os.Getenv("SDM_WIRE_TAKE"); addr != "" {
		os.Exit(takeWithFewFiles(addr))
	}
	if addr := os.Getenv("SDM_WIRE_DIAL"); addr != "" {
		c, err := net.Dial("unix", addr)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			c.Read(make([]byte, 1))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// localResponder dials a leader's end of a local link (NewLocalLink as
// the responder) in the background, and returns the dialled socket and
// where the leader's outcome comes.
func localResponder(t *testing.T, key byte) (*net.UnixConn, <-chan error) {
	t.Helper()
	ln, err := net.ListenUnix("unix", LocalAddress(testKey(t, key), os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = NewLocalLink(c, false, LinkConfig{HandshakeTimeout: 5 * time.Second})
		}
		done <- err
	}()
	c, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, done
}

// A local peer that connects and does not pass the link's pipes (a
// stray client of this user, or a version of sdm before them) is
// refused, and nothing is left open.
func TestLocalLinkWithoutPipes(t *testing.T) {
	c, done := localResponder(t, 3)
	c.Write([]byte("SDM\x00\x00\x02"))
	if err := <-done; !errors.Is(err, ErrNotSDM) {
		t.Fatalf("a peer without pipes: %v, want ErrNotSDM", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Fatalf("the refused peer read %d bytes, %v; want the connection closed", n, err)
	}
}

// Three descriptors with the tag, as a member passes its pipes, but not
// the ends the responder needs (each in turn a socket, a pipe's wrong
// end, a file): refused, and none of them kept open.
func TestLocalLinkRefusesWhatIsNoPipe(t *testing.T) {
	r, w := pipe(t)
	r2, w2 := pipe(t)
	r3, _ := pipe(t)
	sock, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock[0])
	defer unix.Close(sock[1])
	file, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for i, fds := range [][]int{
		{sock[0], fdOf(t, w), fdOf(t, r2)},
		{fdOf(t, r), fdOf(t, r2), fdOf(t, r3)},
		{fdOf(t, r), fdOf(t, w), fdOf(t, w2)},
		{fdOf(t, r), fdOf(t, w), fdOf(t, file)},
	} {
		c, done := localResponder(t, byte(4+i))
		if _, _, err := c.WriteMsgUnix([]byte{pipesTag}, unix.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, ErrNotSDM) || !strings.Contains(err.Error(), "pipes") {
			t.Fatalf("case %d: %v, want ErrNotSDM naming the pipes", i, err)
		}
	}
	// The responder closed every copy it was passed: the only writer of
	// r2's pipe left is w2, so a read finds nothing yet, not the end.
	w2.Close()
	r2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r2.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the refusals, the pipe read %d bytes, %v; want its end (no copy of its writer left)", n, err)
	}
}

// A member's output goes up, not down: the leader cannot send on the
// output stream, nor the member read from it.
func TestLocalLinkOutputGoesUp(t *testing.T) {
	member, leader := localPair(t)
	if err := leader.SendOutput(&Message{Kind: KindEvent, Op: EventOutput}); !errors.Is(err, errOneWay) {
		t.Fatalf("the leader sent output down: %v", err)
	}
	if _, err := member.RecvOutput(); !errors.Is(err, errOneWay) {
		t.Fatalf("the member read output: %v", err)
	}
}

// fdOf is f's descriptor; f.Fd would make it blocking.
func fdOf(t *testing.T, f *os.File) int {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	raw.Control(func(d uintptr) { fd = int(d) })
	return fd
}

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// A leader that has as many files open as it may cannot take a member's
// pipes: it says so, instead of blaming the member.
func TestLocalLinkWithFilesFull(t *testing.T) {
	addr := LocalAddress(testKey(t, 9), os.Getpid()+1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "SDM_WIRE_TAKE="+addr.Name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line := make([]byte, 512)
	n, _ := out.Read(line) // the helper listens, then says so
	if string(line[:n]) != "listening\n" {
		t.Fatalf("helper: %q", line[:n])
	}
	c, err := net.DialUnix("unix", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLocalLink(c, true, LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n, _ = io.ReadFull(out, line)
	if got := string(line[:n]); !strings.Contains(got, "ulimit -n") {
		t.Fatalf("the leader with its files full: %q, want an error naming ulimit -n", got)
	}
}

// takeWithFewFiles is TestLocalLinkWithFilesFull's leader: it accepts one
// member with room for one more file only, and prints what that gave.
func takeWithFewFiles(name string) int {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Net: "unix", Name: name})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("listening")
	ln.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	// The lowest free descriptor is the next one the kernel gives.
	probe, err := unix.Dup(0)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	unix.Close(probe)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println(err)
		return 1
	}
	lim.Cur = uint64(probe) + 1
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println(err)
		return 1
	}
	_, err = NewLocalLink(c, false, LinkConfig{HandshakeTimeout: 10 * time.Second})
	fmt.Println(err)
	return 0
}

// A write to a local link whose peer stopped reading fails once the
// link's silence limit has passed; a write that waited for its reader and
// then went out leaves no deadline behind for the writes after it.
func TestLocalLinkWriteWaitsForItsReader(t *testing.T) {
	const limit = 200 * time.Millisecond
	ln, err := net.ListenUnix("unix", LocalAddress(testKey(t, 2), os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	a, b := pairOn(t, ln, func(c net.Conn, dialer bool) (*Link, error) {
		return NewLocalLink(c, dialer, LinkConfig{Silence: limit})
	})
	big := &Message{Kind: KindEvent, Op: EventOutput, Groups: []Group{{Ranks: Single(0), Body: make([]byte, 1<<20)}}}
	// The reader takes each message only after the writer had to wait
	// for it: the pipe holds far less than a message.
	sendRead := func(what string) {
		t.Helper()
		read := make(chan error, 1)
		go func() {
			_, err := b.RecvOutput()
			read <- err
		}()
		if err := a.SendOutput(big); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := <-read; err != nil {
			t.Fatal(err)
		}
	}
	sendRead("a write its reader took")
	// Past the limit the first write set, a second one still waits its
	// own limit for its reader.
	time.Sleep(2 * limit)
	sendRead("a write after one that waited")
	start := time.Now()
	err = a.SendOutput(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write nobody reads: %v, want a timeout", err)
	}
	if waited := time.Since(start); waited < limit {
		t.Fatalf("a write nobody reads failed after %v, before the silence limit %v", waited, limit)
	}
}
