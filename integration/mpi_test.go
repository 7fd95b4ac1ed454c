package integration

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// session is the front end's side of a tree whose servers someone else
// starts: the key, the routing file and the session port.
type session struct {
	t       *testing.T
	dir     string
	keyFile string
	routes  string
	link    wire.LinkConfig
	ln      *client.Listener
}

func newSession(t *testing.T, n int) *session {
	t.Helper()
	dir := t.TempDir()
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, dir: dir, keyFile: filepath.Join(dir, "key"), routes: filepath.Join(dir, "routes"), link: wire.LinkConfig{Key: key}}
	if err := wire.WriteKeyFile(s.keyFile, key); err != nil {
		t.Fatal(err)
	}
	entries := make([]routing.Entry, n)
	for i := range entries {
		entries[i] = routing.Entry{Index: i, Host: "127.0.0.1", Port: freePort(t)}
	}
	table, err := routing.NewTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	if err := routing.WriteFile(s.routes, table); err != nil {
		t.Fatal(err)
	}
	if s.ln, err = client.Listen("127.0.0.1:0", s.link, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close() })
	return s
}

var (
	portsMu   sync.Mutex
	portsUsed = map[int]bool{}
)

// freePort returns a port that was free a moment ago and that no other
// test was given: the kernel hands a just-closed port out again.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !portsUsed[port] {
			portsUsed[port] = true
			return port
		}
	}
}

// proc is a command running in the background.
type proc struct {
	done chan struct{} // closed when it has exited
	err  error         // its exit error, once done is closed
}

// start runs a command in the background; its output is shown if the test
// fails, and it is killed, with everything it started, when the test ends.
func start(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	var out bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	cmd.Stderr = &out
	// Launchers leave children behind when killed: a group of their own
	// lets the cleanup kill them all, and WaitDelay stops the wait for
	// output from orphans that still hold the pipe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("%s:\n%s", cmd.Args[0], out.String())
		}
	})
	return p
}

func (s *session) master() *proc {
	port := strconv.Itoa(s.ln.Addr().Port)
	return start(s.t, exec.Command(sdmBin, "--master", "--host=127.0.0.1", "--port="+port,
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
}

func (s *session) serverArgs() []string {
	return []string{sdmBin, "--routing_file=" + s.routes, "--key-file=" + s.keyFile, "--debugger=sim"}
}

// debugHang checks the tree of n ranks: all joined (so every server found
// a distinct index in its environment), where splits the stuck rank from
// the waiting ones, and quit ends every process.
func (s *session) debugHang(n int, procs ...*proc) {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := s.ln.Accept(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	start := wire.MustEncode(wire.Start{Program: "hang"})
	command(t, cs.Command, wire.All(n), wire.OpStart, start)
	got := describe(command(t, cs.Command, wire.All(n), wire.OpWhere, nil))
	want := "[0-" + strconv.Itoa(n-2) + "] ok MPI_Recv; [" + strconv.Itoa(n-1) + "] ok compute; "
	if got != want {
		t.Fatalf("where = %q, want %q", got, want)
	}
	if groups, err := cs.Quit(ctx, 10*time.Second); err != nil || !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("quit: %s %v", describe(groups), err)
	}
	for _, p := range procs {
		select {
		case <-p.done:
			if p.err != nil {
				t.Fatalf("after quit: %v", p.err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("processes still running 15s after quit")
		}
	}
}

// Open MPI's mpirun starts the servers; each takes its index from
// OMPI_COMM_WORLD_RANK. The master starts first here.
func TestOpenMPIStartsServers(t *testing.T) {
	mpirun := requireTool(t, "mpirun.openmpi", "mpirun")
	const n = 8
	s := newSession(t, n)
	master := s.master()
	args := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n)}, s.serverArgs()...)
	servers := start(t, exec.Command(mpirun, args...))
	s.debugHang(n, master, servers)
}

// MPICH's mpiexec (Hydra) starts the servers; each takes its index from
// PMI_RANK. The servers start first here and wait for the master.
func TestMPICHStartsServers(t *testing.T) {
	mpiexec := requireTool(t, "mpiexec.mpich", "mpiexec.hydra")
	const n = 8
	s := newSession(t, n)
	args := append([]string{"-n", strconv.Itoa(n)}, s.serverArgs()...)
	servers := start(t, exec.Command(mpiexec, args...))
	master := s.master()
	s.debugHang(n, servers, master)
}
