package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/member"
)

// memberPair is a leader's and a member's ends of a member's connection,
// the member being server index of a job of servers servers as it says.
func memberPair(t *testing.T, index, servers, leaderServers int) (*Member, *member.Leader, error, error) {
	t.Helper()
	key := testKey(t, 9)
	ln, err := net.ListenUnix("unixpacket", LocalAddress(key, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		m   *Member
		err error
	}
	got := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- accepted{nil, err}
			return
		}
		m, err := AcceptMember(c, leaderServers, 5*time.Second)
		if err == nil {
			err = m.Admit()
		}
		got <- accepted{m, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, lerr := member.Join(ctx, key, os.Getpid(), index, servers, 5*time.Second)
	a := <-got
	if a.m != nil {
		t.Cleanup(func() { a.m.Close(false) })
	}
	return a.m, l, a.err, lerr
}

// spawnCat starts cat as a member starts a debugger: its pipes and pidfd
// to be passed on.
func spawnCat(t *testing.T) func() (member.Spawned, error) {
	return func() (member.Spawned, error) {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		errR, errW, _ := os.Pipe()
		cmd := exec.Command("cat")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
		if err := cmd.Start(); err != nil {
			return member.Spawned{}, err
		}
		inR.Close()
		outW.Close()
		errW.Close()
		reaped := make(chan struct{})
		go func() {
			cmd.Wait()
			close(reaped)
		}()
		fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		if err != nil {
			t.Skipf("no pidfd: %v", err)
		}
		wait := func() unix.WaitStatus {
			<-reaped
			return unix.WaitStatus(cmd.ProcessState.Sys().(syscall.WaitStatus))
		}
		return member.Spawned{Stdin: inW, Stdout: outR, Stderr: errR, Pidfd: os.NewFile(uintptr(fd), "pidfd"), Pid: cmd.Process.Pid, Wait: wait}, nil
	}
}

// The leader asks, the member starts a process and hands it over: the
// leader writes to it, reads from it and kills it, and learns how it
// ended; the session's end lets the member go without an error.
func TestMemberSpawns(t *testing.T) {
	m, l, merr, lerr := memberPair(t, 5, 8, 8)
	if merr != nil || lerr != nil || m.Index != 5 {
		t.Fatalf("join: leader %v, member %v", merr, lerr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx, spawnCat(t)) }()
	s, err := m.Spawn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Stdin.WriteString("-gdb-version\n"); err != nil {
		t.Fatal(err)
	}
	s.Stdout.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(s.Stdout).ReadString('\n'); err != nil || line != "-gdb-version\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := unix.PidfdSendSignal(int(s.Pidfd.Fd()), unix.SIGKILL, nil, 0); err != nil {
		t.Fatalf("kill the spawned process %d: %v", s.Pid, err)
	}
	select {
	case ws, ok := <-s.Ended:
		if !ok || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
			t.Fatalf("the spawned process ended with %v (%v), want SIGKILL", ws, ok)
		}
	case <-ctx.Done():
		t.Fatal("the leader was not told how the spawned process ended")
	}
	m.Close(true)
	if err := <-served; err != nil {
		t.Fatalf("the member after the session's end: %v", err)
	}
}

// A member that cannot start its debugger says why; a leader that hangs
// up without ending the session is gone for the member.
func TestMemberSpawnFailsAndLeaderGoes(t *testing.T) {
	m, l, merr, lerr := memberPair(t, 1, 2, 2)
	if merr != nil || lerr != nil {
		t.Fatalf("join: leader %v, member %v", merr, lerr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- l.Serve(ctx, func() (member.Spawned, error) { return member.Spawned{}, errors.New("gdb not found (gdb)") })
	}()
	if _, err := m.Spawn(ctx); err == nil || err.Error() != "gdb not found (gdb)" {
		t.Fatalf("spawn: %v", err)
	}
	m.Close(false)
	if err := <-served; !errors.Is(err, member.ErrLeaderGone) || !strings.Contains(err.Error(), fmt.Sprintf("server %d, which", os.Getpid())) {
		t.Fatalf("the member after its leader hung up: %v, want ErrLeaderGone", err)
	}
	select {
	case <-m.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's end did not notice its own hang-up")
	}
}

// A member that counts another job's servers is refused, and told why.
func TestMemberOfAnotherJobIsRefused(t *testing.T) {
	_, _, merr, lerr := memberPair(t, 1, 4, 8)
	if merr == nil || !strings.Contains(merr.Error(), "4 servers, not 8") {
		t.Fatalf("leader: %v", merr)
	}
	if !errors.Is(lerr, member.ErrRefused) || !strings.Contains(lerr.Error(), "4 servers, not 8") {
		t.Fatalf("member: %v", lerr)
	}
}

// A member hands nothing to a leader's socket that a process of another
// user took first: it is refused, named by its uid, before a word.
func TestMemberRefusesAnotherUsersLeader(t *testing.T) {
	key := testKey(t, 11)
	addr := LocalAddress(key, os.Getpid())
	out := asNobody(t, "SDM_WIRE_SQUAT="+addr.Name)
	line, err := bufio.NewReader(out).ReadString('\n') // ends with the squatter, within its minute
	if line != "listening\n" {
		t.Fatalf("the squatter said %q: %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := member.Join(ctx, key, os.Getpid(), 1, 4, 5*time.Second); !errors.Is(err, member.ErrRefused) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("a leader of uid 65534: %v, want ErrRefused naming its uid", err)
	}
}

// A packet that is not a join is refused.
func TestMemberGarbageIsRefused(t *testing.T) {
	ln, err := net.ListenUnix("unixpacket", LocalAddress(testKey(t, 10), os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = AcceptMember(c, 4, 5*time.Second)
		}
		done <- err
	}()
	c, err := net.Dial("unixpacket", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"M\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
		c.Write([]byte(p))
	}
	if err := <-done; !errors.Is(err, ErrNotSDM) {
		t.Fatalf("garbage: %v, want ErrNotSDM", err)
	}
}

// packetPair is a connected pair of SOCK_SEQPACKET Unix sockets.
func packetPair(t testing.TB) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "seqpacket")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// Whatever a local peer sends, a leader taking a member ends with an
// error or a member, never a panic or a wait beyond its bound (the
// member's side: member.FuzzLeaderPackets).
func FuzzMemberPackets(f *testing.F) {
	for _, seed := range []string{"M\x05\x08", "M\x05", "M", "", "S", "Q", "A", "Rno", "s\x07", "x\x01\x09", "M\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01\x08"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		leader, peer := packetPair(t)
		defer peer.Close()
		peer.Write(p)
		if m, err := AcceptMember(leader, 8, time.Second); err == nil {
			if m.Index < 0 {
				t.Fatalf("a member of index %d", m.Index)
			}
			m.Close(false)
		}
	})
}
