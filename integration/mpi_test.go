package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// session is the front end's side of a tree whose servers someone else
// starts: the key, the routing file and the session port.
type session struct {
	t       testing.TB
	dir     string
	keyFile string
	routes  string
	link    wire.LinkConfig
	ln      *client.Listener
	// tree, when set, is the --tree of the master and every server, or
	// hosts-serve: the tree of hosts with --members=serve.
	tree string
}

func newSession(t testing.TB, n int) *session {
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
	if err := routing.Write(s.routes, table, nil); err != nil {
		t.Fatal(err)
	}
	if s.ln, err = client.Listen("127.0.0.1:0", s.link, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ln.Close() })
	return s
}

// freePort returns a port of the loopback that nothing else can be given
// until the test ends, and that a server told to listen on it can bind.
// It holds the port with a socket bound (with SO_REUSEADDR) and never
// listening: the kernel then hands the port to no port-0 bind and no
// outgoing connection, while a listener that binds it by number (Go's
// set SO_REUSEADDR, as sshd does) may. The port is thus taken by the
// kernel, not guessed, and there is no moment between its release and
// its use when another process could take it.
func freePort(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("reserve a port: %v", err)
	}
	return sa.(*unix.SockaddrInet4).Port
}

// proc is a command running in the background.
type proc struct {
	cmd   *exec.Cmd
	done  chan struct{} // closed when it has exited
	err   error         // its exit error, once done is closed
	out   lockedBuffer  // its output so far
	wrote chan struct{} // signalled when output arrives
}

// anyOutput is signalled whenever any background command writes output.
var anyOutput = make(chan struct{}, 1)

// joined counts the servers a master logged as joined (with --debug).
func (p *proc) joined() int { return strings.Count(p.out.String(), " joined from ") }

// lockedBuffer collects output written by another goroutine.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	notify func()
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.notify != nil {
		b.notify()
	}
	return n, err
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs a command made by testenv.Command in the background; its
// output is shown if the test fails, and it is killed, with everything it
// started, when the test ends (or at its deadline).
func start(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, done: make(chan struct{}), wrote: make(chan struct{}, 1)}
	p.out.notify = func() {
		for _, ch := range []chan struct{}{p.wrote, anyOutput} {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.out
	}
	cmd.Stderr = &p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("%s:\n%s", cmd.Args[0], p.out.String())
		}
	})
	return p
}

// join waits until the master has connected and every one of n ranks has
// joined, and returns the session, which ends with the test.
func (s *session) join(ctx context.Context, n int) *client.Session {
	s.t.Helper()
	cs, err := s.ln.Accept(ctx, n)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cs.Close() })
	if err := cs.WaitConnected(ctx, nil); err != nil {
		s.t.Fatal(err)
	}
	return cs
}

func (s *session) master() *proc {
	port := strconv.Itoa(s.ln.Addr().Port)
	return start(s.t, testenv.Command(s.t, sdmBin, append([]string{"--master", "--host=127.0.0.1", "--port=" + port,
		"--routing_file=" + s.routes, "--key-file=" + s.keyFile}, s.treeArgs()...)...))
}

// serverArgs are the command line of the session's servers: sdm, or in
// the tree whose members hand their ranks over (tree "hosts") sdm-rank,
// as sdm's launchers start them.
func (s *session) serverArgs() []string {
	args := []string{sdmBin}
	if s.tree == "hosts" {
		args = []string{filepath.Join(filepath.Dir(sdmBin), "sdm-rank"), "--members=hand"}
	}
	return append(append(args, "--routing_file="+s.routes, "--key-file="+s.keyFile, "--debugger=sim"), s.treeArgs()...)
}

func (s *session) treeArgs() []string {
	switch s.tree {
	case "":
		return nil
	case "hosts-serve":
		return []string{"--tree=hosts", "--members=serve"}
	}
	return []string{"--tree=" + s.tree}
}

// debugHang checks the tree of n ranks: all joined (so every server found
// a distinct index in its environment), where splits the stuck rank from
// the waiting ones, and quit ends every process.
func (s *session) debugHang(n int, procs ...*proc) {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.join(ctx, n)
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
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	const n = 8
	s := newSession(t, n)
	master := s.master()
	args := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n)}, s.serverArgs()...)
	servers := start(t, testenv.Command(t, mpirun, args...))
	s.debugHang(n, master, servers)
}

// MPICH's mpiexec (Hydra) starts the servers; each takes its index from
// PMI_RANK. The servers start first here and wait for the master.
func TestMPICHStartsServers(t *testing.T) {
	mpiexec := testenv.RequireTool(t, "mpiexec.mpich", "mpiexec.hydra")
	const n = 8
	s := newSession(t, n)
	args := append([]string{"-n", strconv.Itoa(n)}, s.serverArgs()...)
	servers := start(t, testenv.Command(t, mpiexec, args...))
	master := s.master()
	s.debugHang(n, servers, master)
}

// startServer starts rank i's server by hand, as a launcher would.
func (s *session) startServer(args []string, i int) *proc {
	cmd := testenv.Command(s.t, args[0], append(args[1:], "--server="+strconv.Itoa(i))...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	return start(s.t, cmd)
}
