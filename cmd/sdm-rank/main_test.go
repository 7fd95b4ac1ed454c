package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/secret"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// sdmRank builds sdm-rank alone into a directory of its own, without
// sdm-server beside it: with its start in C (cgo) or without.
func sdmRank(t *testing.T, cgo bool) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "sdm-rank")
	build := testenv.Command(t, "go", "build", "-tags", "netgo", "-o", exe, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if cgo {
		build.Env = append(build.Env, "CGO_ENABLED=1")
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// keyFile writes a key file as a front end does, or open to others.
func keyFile(t *testing.T, mode os.FileMode) (string, secret.Key) {
	t.Helper()
	var key secret.Key
	key[0], key[31] = 0xab, 0x17
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(key.String()+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return path, key
}

// Each way a start fails says why, with the rank where it has one, and
// exits 1, started in C or in Go: sdm-server missing for a start that is
// its, a key file open to others, a leader that never listens, within
// --timeout.
func TestStartFailures(t *testing.T) {
	file := routes(t, "n1", "n1")
	key, _ := keyFile(t, 0o600)
	open, _ := keyFile(t, 0o644)
	for _, cgo := range []bool{false, true} {
		exe := sdmRank(t, cgo)
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--master", "--routing_file=" + file}, "cannot execute " + filepath.Join(filepath.Dir(exe), "sdm-server") + " (the master)"},
			{[]string{"--server=1", "--members=hand", "--routing_file=" + file, "--key-file=" + open}, "sdm-rank: rank 1: " + open + ": insecure permissions"},
			{[]string{"--server=1", "--members=hand", "--routing_file=" + file, "--key-file=" + key, "--timeout=50ms"}, "sdm-rank: rank 1: could not reach server 0, this host's first, in "},
		} {
			cmd := testenv.Command(t, exe, c.args...)
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), c.want) {
				t.Errorf("cgo %v, %q: %v, %q; want exit 1 saying %q", cgo, c.args, err, out, c.want)
			}
			if strings.Contains(c.want, "could not reach") && !strings.HasSuffix(string(out), ": connect: connection refused\n") {
				t.Errorf("cgo %v, %q: %q, want the refused connect named", cgo, c.args, out)
			}
		}
	}
}

// member is sdm-rank started as server 1 of a host of two, joined to
// the leader the test plays: the leader's end of their connection, and
// the member's process, whose end done tells.
type memberProc struct {
	conn   *net.UnixConn
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// startMember starts exe as server 1 with args, and admits it.
func startMember(t *testing.T, exe string, args ...string) *memberProc {
	t.Helper()
	ln, m := launch(t, exe, args...)
	defer ln.Close()
	m.conn = m.join(t, ln)
	m.send(t, member.TagAdmit)
	return m
}

// launch listens as the leader and starts exe as server 1 with args.
func launch(t *testing.T, exe string, args ...string) (*net.UnixListener, *memberProc) {
	t.Helper()
	file := routes(t, "n1", "n1")
	path, key := keyFile(t, 0o600)
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: member.Address(key, 0), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	m := &memberProc{stderr: new(bytes.Buffer), done: make(chan error, 1)}
	m.cmd = testenv.Command(t, exe, append([]string{"--server=1", "--members=hand", "--routing_file=" + file, "--key-file=" + path}, args...)...)
	m.cmd.Stderr = m.stderr
	if err := m.cmd.Start(); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go func() { m.done <- m.cmd.Wait() }()
	return ln, m
}

// join accepts the member's connection and reads its join.
func (m *memberProc) join(t *testing.T, ln *net.UnixListener) *net.UnixConn {
	t.Helper()
	ln.SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := ln.AcceptUnix()
	if err != nil {
		t.Fatalf("no join: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, member.MaxPacket)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "M\x01\x02" {
		t.Fatalf("join: %q, %v; want server 1 of 2", buf[:n], err)
	}
	return conn
}

func (m *memberProc) send(t *testing.T, tag byte) {
	t.Helper()
	if _, err := m.conn.Write([]byte{tag}); err != nil {
		t.Fatal(err)
	}
}

// exit waits for the member's end and checks its status and what it
// said.
func (m *memberProc) exit(t *testing.T, code int, says string) {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the member did not end within 10s; stderr %q", m.stderr)
	}
	if got := m.cmd.ProcessState.ExitCode(); got != code || !strings.Contains(m.stderr.String(), says) {
		t.Errorf("exit %d, stderr %q; want %d saying %q", got, m.stderr, code, says)
	}
}

// idleInC waits until the member waits for its leader's word in poll(2),
// as the start in C does, and checks that it runs one thread: Go, which
// would run more, never started.
func (m *memberProc) idleInC(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		return // poll's number below is amd64's
	}
	const sysPoll = 7
	pid := strconv.Itoa(m.cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; {
		call, _ := os.ReadFile("/proc/" + pid + "/syscall")
		if n, _, _ := strings.Cut(string(call), " "); n == strconv.Itoa(sysPoll) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member is not waiting in poll(2) after 10s: /proc/%s/syscall %q", pid, call)
		}
		time.Sleep(time.Millisecond)
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if _, rest, _ := strings.Cut(string(status), "Threads:\t"); err != nil || !strings.HasPrefix(rest, "1\n") {
		t.Errorf("the member idles with threads %q (%v), want 1", rest[:min(len(rest), 4)], err)
	}
}

// A member joins, and ends at the session's end, both with its start in
// C, where it idles without Go, and without; one asked for a debugger
// starts it and passes it on, and one whose leader hangs up says so.
func TestMember(t *testing.T) {
	debugger := filepath.Join(t.TempDir(), "debugger")
	if err := os.WriteFile(debugger, []byte("#!/bin/sh\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cgo := range []bool{false, true} {
		exe := sdmRank(t, cgo)
		t.Run("cgo="+strconv.FormatBool(cgo), func(t *testing.T) {
			m := startMember(t, exe, "--debugger=sim")
			if cgo {
				m.idleInC(t)
			}
			m.send(t, member.TagQuit)
			m.exit(t, 0, "")

			m = startMember(t, exe, "--debugger_path="+debugger)
			m.send(t, member.TagSpawn)
			p, oob := make([]byte, member.MaxPacket), make([]byte, unix.CmsgSpace(4*4))
			n, oobn, _, _, err := m.conn.ReadMsgUnix(p, oob)
			fds := member.Rights(oob[:oobn])
			if err != nil || n < 2 || p[0] != member.TagSpawned || len(fds) != 4 {
				t.Fatalf("spawn: %q, %d descriptors, %v; want the debugger's", p[:n], len(fds), err)
			}
			for _, fd := range fds {
				unix.Close(fd) // the debugger's stdin among them: cat ends
			}
			if n, err := m.conn.Read(p); err != nil || p[0] != member.TagEnded {
				t.Fatalf("after the debugger's stdin closed: %q, %v; want its end", p[:n], err)
			}
			m.send(t, member.TagQuit)
			m.exit(t, 0, "")

			m = startMember(t, exe, "--debugger=sim")
			m.conn.Close()
			m.exit(t, 1, "sdm-rank: rank 1: server 0, which this host's ranks were handed to, is gone")
		})
	}
}

// A member that its leader refuses says why and exits 1; started in C,
// it leaves the refusal to Go, which joins again and is refused again.
func TestMemberRefused(t *testing.T) {
	for _, cgo := range []bool{false, true} {
		ln, m := launch(t, sdmRank(t, cgo), "--debugger=sim")
		joins := 1
		if cgo {
			joins = 2
		}
		for range joins {
			conn := m.join(t, ln)
			if _, err := conn.Write([]byte("Rno room")); err != nil {
				t.Fatal(err)
			}
			conn.Close()
		}
		ln.Close()
		m.exit(t, 1, "sdm-rank: rank 1: server 0, this host's first, refused us: refused by this host's leader: no room")
	}
}

// TestMain runs the tests, or, with $SDM_RANK_SQUAT set, squats.
func TestMain(m *testing.M) {
	if name := os.Getenv("SDM_RANK_SQUAT"); name != "" {
		squat(name)
		return
	}
	os.Exit(m.Run())
}

// squat takes the socket name as another user would, says so, and
// prints what any peer sends it, until killed.
func squat(name string) {
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: name, Net: "unixpacket"})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		p := make([]byte, member.MaxPacket)
		if n, _ := c.Read(p); n > 0 {
			fmt.Printf("got %q\n", p[:n])
		}
		c.Close()
	}
}

// A member whose leader's socket another user took first sends it
// nothing, and says whose it is, started in C or in Go.
func TestMemberRefusesAnotherUsersLeader(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	self := testenv.SelfCopy(t)
	file := routes(t, "n1", "n1")
	for _, cgo := range []bool{false, true} {
		exe := sdmRank(t, cgo)
		path, key := keyFile(t, 0o600)
		squatter := testenv.Command(t, self)
		squatter.Env = append(os.Environ(), "SDM_RANK_SQUAT="+member.Address(key, 0))
		squatter.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := squatter.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := squatter.Start(); err != nil {
			t.Fatal(err)
		}
		said := bufio.NewReader(out)
		if line, err := said.ReadString('\n'); line != "listening\n" {
			t.Fatalf("the squatter said %q: %v", line, err)
		}
		cmd := testenv.Command(t, exe, "--server=1", "--members=hand", "--routing_file="+file, "--key-file="+path, "--debugger=sim", "--timeout=5s")
		msg, _ := cmd.CombinedOutput()
		squatter.Process.Kill()
		rest, _ := io.ReadAll(said)
		squatter.Wait()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(msg), "runs as uid 65534") {
			t.Errorf("cgo %v: %q, want exit 1 naming the squatter's uid", cgo, msg)
		}
		if len(rest) > 0 {
			t.Errorf("cgo %v: the squatter was sent %s", cgo, rest)
		}
	}
}
