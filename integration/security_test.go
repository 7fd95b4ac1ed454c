package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/connect"
	"github.com/sdm-hpc/sdm/internal/handover"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// A peer without the session key gets nothing out of the tree's ports and
// cannot put anything in: the handshake fails before any message.
func TestTreePortsRefuseStrangers(t *testing.T) {
	const n = 8
	// One node per rank: every server with children listens on TCP.
	s := launchRanks(t, n, 0, "ring")
	table, err := routing.ReadFile(s.Dir + "/routes")
	if err != nil {
		t.Fatal(err)
	}
	master, err := routing.ReadMaster(s.Dir+"/routes", n)
	if err != nil {
		t.Fatal(err)
	}
	wrong := wire.LinkConfig{Key: wire.Key{1, 2, 3}, HandshakeTimeout: 2 * time.Second}
	for _, e := range []routing.Entry{table.Entries[0], table.Entries[2], master} {
		conn, err := net.Dial("tcp", e.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wire.NewLink(conn, wire.ToParent(e.Index, n), wrong); !errors.Is(err, wire.ErrAuth) {
			t.Errorf("%s with the wrong key: %v, want ErrAuth", e.Addr(), err)
		}
		// Raw bytes, as a port scanner or a forged message would send:
		// the answer is the preamble and challenge and nothing else,
		// then the port closes.
		conn, err = net.Dial("tcp", e.Addr())
		if err != nil {
			t.Fatal(err)
		}
		frame := append([]byte{0, 0, 0, 20}, []byte("forged command frame")...)
		conn.Write(frame)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(conn)
		conn.Close()
		if len(got) > greeting {
			t.Errorf("%s sent %d bytes to a stranger", e.Addr(), len(got))
		}
	}
	// The tree is unharmed.
	groups := command(t, s.Command, wire.All(n), wire.OpStatus, nil)
	if !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("after the strangers: %s", describe(groups))
	}
}

// A master that listens for its front end (no --host) serves only the one
// that holds the key; a stranger is dropped and the master keeps waiting.
func TestListeningMasterServesOnlyTheKeyHolder(t *testing.T) {
	const n = 4
	s := newSession(t, n)
	port := freePort(t)
	master := start(t, testenv.Command(t, sdmBin, "--master", "--port="+strconv.Itoa(port),
		"--routing_file="+s.routes, "--key-file="+s.keyFile))
	args := append([]string{}, s.serverArgs()[1:]...)
	var servers []*proc
	for i := 0; i < n; i++ {
		servers = append(servers, start(t, testenv.Command(t, sdmBin, append(args, "--server="+strconv.Itoa(i))...)))
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stranger error
	for {
		// The master may not listen yet: retry until it does.
		_, stranger = client.Dial(ctx, addr, wire.LinkConfig{Key: wire.Key{9}}, n)
		var op *net.OpError
		if !errors.As(stranger, &op) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(stranger, wire.ErrAuth) {
		t.Fatalf("stranger: %v, want ErrAuth", stranger)
	}
	cs, err := client.Dial(ctx, addr, s.link, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	command(t, cs.Command, wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "ring"}))
	if groups := command(t, cs.Command, wire.All(n), wire.OpStatus, nil); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("status: %s", describe(groups))
	}
	if _, err := cs.Quit(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(servers, master) {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Fatal("a server is still running 10s after quit")
		}
	}
}

// The master's link to the front end can be its standard input and output
// (--proxy=stdio), and --generate_routes has the master write the routing
// file for servers started with --server=ID, here before the master.
func TestStdioMasterGeneratesRoutes(t *testing.T) {
	const n = 3
	s := newSession(t, n)
	os.Remove(s.routes) // the master writes it
	args := append([]string{}, s.serverArgs()[1:]...)
	for i := 0; i < n; i++ {
		start(t, testenv.Command(t, sdmBin, append(args, "--server="+strconv.Itoa(i))...))
	}
	toMaster, masterIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	masterOut, fromMaster, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := testenv.Command(t, sdmBin, "--master", "--proxy=stdio", "--generate_routes=127.0.0.1,127.0.0.1,127.0.0.1",
		"--routing_file="+s.routes, "--key-file="+s.keyFile)
	cmd.Stdin, cmd.Stdout = toMaster, fromMaster
	start(t, cmd)
	toMaster.Close()
	fromMaster.Close()
	cs, err := client.Open(&pipeConn{r: masterOut, w: masterIn}, s.link, n)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cs.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	table, err := routing.ReadFile(s.routes)
	if err != nil || table.Size() != n {
		t.Fatalf("generated routing file: %v %v", table, err)
	}
	command(t, cs.Command, wire.All(n), wire.OpStart, wire.MustEncode(wire.Start{Program: "ring"}))
	if groups := command(t, cs.Command, wire.All(n), wire.OpWhere, nil); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("where: %s", describe(groups))
	}
}

// pipeConn is a net.Conn over two pipes.
type pipeConn struct{ r, w *os.File }

func (p *pipeConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeConn) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeConn) Close() error                { p.w.Close(); return p.r.Close() }
func (p *pipeConn) LocalAddr() net.Addr         { return &net.UnixAddr{Name: "pipe"} }
func (p *pipeConn) RemoteAddr() net.Addr        { return &net.UnixAddr{Name: "pipe"} }
func (p *pipeConn) SetDeadline(t time.Time) error {
	p.r.SetReadDeadline(t)
	return p.w.SetWriteDeadline(t)
}
func (p *pipeConn) SetReadDeadline(t time.Time) error  { return p.r.SetReadDeadline(t) }
func (p *pipeConn) SetWriteDeadline(t time.Time) error { return p.w.SetWriteDeadline(t) }

// sdm requests lists what it can read and skips the rest at once: a FIFO
// named like a request does not hang it, and the escape sequences of a
// request's command line reach the terminal quoted.
func TestRequestsCommandSkipsAFIFOAndEscapes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "connect")
	if err := connect.Secure(dir); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "x.request"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := connect.NewRequest([]string{"./plain", "\x1b[2J\x1b[Hsdm: nothing waits"},
		connect.Plan{Mode: connect.ModeProcess, RM: "local", Size: 1, Program: []string{"./plain"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runEnv(t, []string{connect.DirEnv + "=" + dir}, "requests")
	if code != 0 {
		t.Fatalf("sdm requests: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "x.request: not a regular file") {
		t.Errorf("the FIFO was not reported: %q", errOut)
	}
	if strings.ContainsRune(out+errOut, 0x1b) {
		t.Errorf("an escape sequence reached the terminal: %q", out)
	}
	if !strings.Contains(out, `\x1b[2J\x1b[Hsdm: nothing waits`) {
		t.Errorf("the request is not listed, quoted: %q", out)
	}
}

// A server or master given the key in $SDM_SESSION_KEY keeps it out of
// /proc/PID/environ, which os.Unsetenv alone would not change, and out of
// its command line, while the tree works with it.
func TestKeyLeavesTheEnvironmentOfServers(t *testing.T) {
	const n = 4
	s := newSession(t, n)
	key := s.link.Key.String()
	env := append(cleanEnv(), wire.KeyEnv+"="+key)
	port := freePort(t)
	masterCmd := testenv.Command(t, sdmBin, "--master", "--port="+strconv.Itoa(port), "--routing_file="+s.routes)
	masterCmd.Env = env
	procs := []*proc{start(t, masterCmd)}
	for i := 0; i < n; i++ {
		cmd := testenv.Command(t, sdmBin, "--routing_file="+s.routes, "--debugger=sim", "--server="+strconv.Itoa(i))
		cmd.Env = env
		procs = append(procs, start(t, cmd))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var cs *client.Session
	var err error
	for {
		// The master may not listen yet: retry until it does.
		cs, err = client.Dial(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), s.link, n)
		var op *net.OpError
		if !errors.As(err, &op) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.WaitConnected(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		// Executed again without the key, it keeps its name.
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/comm")
		if got := strings.TrimSpace(string(comm)); got != filepath.Base(sdmBin) {
			t.Errorf("%v: named %q in ps, want %q", p.cmd.Args[1:], got, filepath.Base(sdmBin))
		}
		for _, file := range []string{"environ", "cmdline"} {
			data, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/" + file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), key) || strings.Contains(string(data), wire.KeyEnv+"=") {
				t.Errorf("%v: /proc/PID/%s holds the session key", p.cmd.Args[1:], file)
			}
		}
	}
	if groups := command(t, cs.Command, wire.All(n), wire.OpStatus, nil); !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("status: %s", describe(groups))
	}
}

// A front end killed with SIGKILL cannot remove its session directory, key
// file included; the next front end of the same user removes it.
func TestKilledFrontEndsSessionIsRemovedByTheNext(t *testing.T) {
	tmp := t.TempDir()
	env := append(cleanEnv(), "TMPDIR="+tmp)
	first := testenv.Command(t, sdmBin, "debug", "-n", "2", "--backend", "sim", "--", "ring")
	first.Env = env
	stdin, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, first)
	io.WriteString(stdin, "where\n")
	p.lines(t, 1, "ring.c")
	dirs, _ := filepath.Glob(filepath.Join(tmp, "sdm-*"))
	if len(dirs) != 1 {
		t.Fatalf("session directories %v, want one", dirs)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "key")); err != nil {
		t.Fatalf("the running session has no key file: %v", err)
	}
	first.Process.Signal(syscall.SIGKILL)
	<-p.done
	if _, err := os.Stat(dirs[0]); err != nil {
		t.Fatalf("the killed front end's directory is already gone: %v", err)
	}
	out, errOut, code := runWith(t, env, "", "debug", "-n", "1", "--backend", "sim", "-e", "where", "--", "ring")
	if code != 0 {
		t.Fatalf("the next front end: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(dirs[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed front end's session directory is still there: %v", err)
	}
}

// boundTo returns the local addresses of the listening TCP sockets on
// port, from /proc/net/tcp (hex "0100007F" is 127.0.0.1).
func boundTo(t *testing.T, port int) []string {
	t.Helper()
	var addrs []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // LISTEN
				continue
			}
			addr, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				addrs = append(addrs, addr)
			}
		}
	}
	return addrs
}

// A master started by hand without --host listens for its front end on
// the loopback only, or where --listen says; a server binds the address
// its routing-file entry gives.
func TestHandStartedMasterBindsLoopback(t *testing.T) {
	const n = 4
	s := newSession(t, n)
	s.tree = "ranks" // rank 0 then listens on TCP for children
	table, err := routing.ReadFile(s.routes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		listen []string
		want   string
	}{
		{nil, "0100007F"},
		{[]string{"--listen=0.0.0.0"}, "00000000"},
	} {
		port := freePort(t)
		args := append([]string{"--master", "--port=" + strconv.Itoa(port), "--routing_file=" + s.routes, "--key-file=" + s.keyFile}, c.listen...)
		master := start(t, testenv.Command(t, sdmBin, args...))
		conn := dialRetry(t, func() (string, error) { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil })
		conn.Close()
		// Go binds 0.0.0.0 as the dual-stack [::], which tcp6 lists.
		if got := boundTo(t, port); len(got) != 1 || strings.Trim(got[0], "0") != strings.Trim(c.want, "0") {
			t.Errorf("master %v: session port bound to %v, want %s", c.listen, got, c.want)
		}
		master.cmd.Process.Kill()
		<-master.done
	}
	s.startServer(s.serverArgs(), 0) // rank 0 has children: it listens
	port := table.Entries[0].Port
	dialRetry(t, func() (string, error) { return table.Entries[0].Addr(), nil }).Close()
	if got := boundTo(t, port); len(got) != 1 || got[0] != "0100007F" {
		t.Errorf("rank 0 (routing entry %s) bound to %v, want 127.0.0.1 only", table.Entries[0].Addr(), got)
	}
}

// A process of another user that finds a host leader's Unix socket (its
// name is no secret) is refused before a byte is read, and the host's
// servers go on answering.
func TestLocalSocketRefusesOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	const n = 4 // all on this host: server 0 leads, 1-3 link to it over its socket
	s := newSession(t, n)
	s.master()
	leader := s.startServer(s.serverArgs(), 0)
	for i := 1; i < n; i++ {
		s.startServer(s.serverArgs(), i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.join(ctx, n)

	// This test's binary, as user nobody, dials the socket and reports
	// what it read (TestMain: localDialEnv).
	bin := testenv.SelfCopy(t)
	stranger := testenv.Command(t, bin)
	stranger.Env = append(os.Environ(), localDialEnv+"="+wire.LocalAddress(s.link.Key, 0).Name)
	stranger.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	out, err := stranger.CombinedOutput()
	// Nothing came back: the leader hung up (EOF), or reset the
	// connection, the stranger's bytes unread.
	if err != nil || !strings.Contains(string(out), "read 0 bytes: ") {
		t.Fatalf("a stranger at the leader's socket (%s, from %s): %v\n%s", bin, os.Args[0], err, out)
	}
	leader.lines(t, 1, "runs as uid 65534")
	if g, err := cs.Command(ctx, wire.All(n), wire.OpStatus, nil, 10*time.Second); err != nil || !okRanks(g).Equal(wire.All(n)) {
		t.Fatalf("status after the stranger: %s %v", describe(g), err)
	}
}

// localDialEnv makes the integration test binary dial the Unix socket it
// names, say what it read until the peer hung up, and exit.
const localDialEnv = "SDM_TEST_LOCAL_DIAL"

// localDial is the stranger of TestLocalSocketRefusesOtherUsers.
func localDial(addr string) {
	// A leader its members hand their ranks to takes packets.
	c, err := net.Dial("unixpacket", addr)
	if err != nil {
		c, err = net.Dial("unix", addr)
	}
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	c.Write([]byte("SDM\x00"))
	got, err := io.ReadAll(c)
	if err == nil {
		err = io.EOF
	}
	fmt.Printf("read %d bytes: %v\n", len(got), err)
}

// The debugged program's view of the session is what docs/SECURITY.md
// says: SDM_RANK, SDM_SIZE and SDM_SESSION in its environment, never the
// key nor the descriptor it was handed on; no descriptor sdm opened (a
// socket, a pidfd, the server's terminal master, a file of the session).
func TestProgramsViewOfTheSession(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	for _, gdb := range []string{"lazy", "eager"} {
		t.Run(gdb, func(t *testing.T) {
			env := append(cleanEnv(), wire.KeyEnv+"="+wire.Key{9}.String())
			out, stderr, code := runWith(t, env, "", "debug", "-n", "2", "--rm", "local", "--gdb", gdb,
				"-e", "run", "-e", "wait", "--", "/usr/bin/env")
			if code != 0 {
				t.Fatalf("env under sdm: exit %d\n%s%s", code, out, stderr)
			}
			for _, want := range []string{"[0] SDM_RANK=0\n", "[1] SDM_RANK=1\n", "SDM_SIZE=2\n", "SDM_SESSION=/"} {
				if !strings.Contains(out, want) {
					t.Errorf("the program's environment lacks %q:\n%s", want, out)
				}
			}
			for _, never := range []string{wire.KeyEnv + "=", handover.KeyFDEnv + "=", handover.ListenFDEnv + "=", handover.GOMAXPROCSEnv + "="} {
				if strings.Contains(out, never) {
					t.Errorf("the program's environment holds %s:\n%s", never, out)
				}
			}
			out, stderr, code = runWith(t, env, "", "debug", "-n", "2", "--rm", "local", "--gdb", gdb,
				"-e", "run", "-e", "wait", "--", "/bin/ls", "-l", "/proc/self/fd/")
			if code != 0 {
				t.Fatalf("ls under sdm: exit %d\n%s%s", code, out, stderr)
			}
			passed := passedOn(t)
			for _, line := range strings.Split(out, "\n") {
				head, target, ok := strings.Cut(line, " -> ")
				if f := strings.Fields(head); !ok || passed[f[len(f)-1]] {
					continue
				}
				for _, sdms := range []string{"socket:", "pidfd", "eventpoll", "eventfd", "ptmx", "/sdm-", "pipe:"} {
					if strings.Contains(target, sdms) {
						t.Errorf("the program holds a descriptor of sdm's: %s", line)
					}
				}
			}
		})
	}
}

// passedOn returns the descriptors of this process that its children
// inherit (those without close-on-exec): whatever started the tests may
// have left some, and they reach the program through sdm as through any
// launcher.
func passedOn(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			passed[e.Name()] = true
		}
	}
	return passed
}
