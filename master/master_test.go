package master

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/wire"
)

// deadline bounds each wait of these tests.
const deadline = 10 * time.Second

// The generated routing file has one server per host listed, in order,
// on ports of routing.PortRange, never two on one port of one host.
func TestGenerateWritesRoutingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	hosts := []string{"a", "b", "a", "a", "c", "b"}
	table, err := generate(path, hosts)
	if err != nil {
		t.Fatal(err)
	}
	read, err := routing.ReadFile(path)
	if err != nil {
		t.Fatalf("the generated file does not read back: %v", err)
	}
	if read.Size() != len(hosts) || table.Size() != len(hosts) {
		t.Fatalf("%d and %d entries for %d hosts", read.Size(), table.Size(), len(hosts))
	}
	lo, hi := routing.PortRange()
	used := map[string]bool{}
	for i, h := range hosts {
		e, ok := read.Lookup(i)
		if !ok || e.Host != h {
			t.Fatalf("entry %d: %+v, want host %s", i, e, h)
		}
		if e.Port < lo || e.Port > hi {
			t.Errorf("entry %d: port %d outside %d-%d", i, e.Port, lo, hi)
		}
		if used[e.Addr()] {
			t.Errorf("entry %d: %s given twice", i, e.Addr())
		}
		used[e.Addr()] = true
		if want, _ := table.Lookup(i); want != e {
			t.Errorf("entry %d: file says %+v, returned %+v", i, e, want)
		}
	}
}

// More servers on one host than half the port range is refused, naming
// the host, and no file is written.
func TestGenerateLimitsServersPerHost(t *testing.T) {
	lo, hi := routing.PortRange()
	hosts := []string{"other"}
	for range (hi-lo)/2 + 1 {
		hosts = append(hosts, "crowded")
	}
	path := filepath.Join(t.TempDir(), "routes")
	_, err := generate(path, hosts)
	if err == nil || !strings.Contains(err.Error(), "host crowded") || strings.Contains(err.Error(), "host other") {
		t.Fatalf("%d servers on one host: %v", len(hosts)-1, err)
	}
	if _, err := routing.ReadFile(path); err == nil {
		t.Error("a refused generation wrote the routing file")
	}
}

// A host name the routing file cannot hold is refused.
func TestGenerateRefusesBadHost(t *testing.T) {
	if _, err := generate(filepath.Join(t.TempDir(), "routes"), []string{"a", "two words"}); err == nil {
		t.Fatal("a host with a space was written into a routing file")
	}
}

// publish listens where the master file it writes says: at the public
// host, on the port it bound, as index N.
func TestPublishWritesMasterFile(t *testing.T) {
	t.Setenv(routing.HostEnv, "127.0.0.1")
	path := filepath.Join(t.TempDir(), "routes")
	ln, err := publish(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e, err := routing.ReadMaster(path, 4)
	if err != nil {
		t.Fatalf("the master file does not read back: %v", err)
	}
	if e.Index != 4 || e.Host != "127.0.0.1" || e.Port != ln.Addr().(*net.TCPAddr).Port {
		t.Fatalf("master file says %+v, listener is %v", e, ln.Addr())
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.DialTimeout("tcp", e.Addr(), deadline)
	if err != nil {
		t.Fatalf("dialling the published address: %v", err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
}

// A master file that cannot be written fails publish, naming the file,
// and leaves no port open.
func TestPublishFailsWithoutDirectory(t *testing.T) {
	t.Setenv(routing.HostEnv, "127.0.0.1")
	path := filepath.Join(t.TempDir(), "missing", "routes")
	ln, err := publish(path, 2)
	if err == nil {
		ln.Close()
		t.Fatal("publish wrote into a directory that does not exist")
	}
	if !strings.Contains(err.Error(), routing.MasterPath(path)) {
		t.Errorf("error does not name the master file: %v", err)
	}
}

// A routing file with two servers at one host and port is refused before
// the master listens, both lines named.
func TestChildrenRefusesASharedAddress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(path, []byte("3\n0 127.0.0.1 5000\n1 127.0.0.1 5001\n2 127.0.0.1 5000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, _, err := Options{RoutingFile: path, Timeout: deadline}.children(context.Background())
	if err == nil {
		ln.Close()
		t.Fatal("a routing file with a shared address was taken")
	}
	if want := path + ":4: server 2 is at 127.0.0.1:5000, as server 0 is (" + path + ":2)"; err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// Over stdio the master has its link once: a second attempt (after the
// link failed) is an error, not the same dead connection again.
func TestUpstreamStdioOnce(t *testing.T) {
	mine, theirs := net.Pipe()
	defer theirs.Close()
	up, err := Options{Stdio: mine}.upstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.close()
	c, err := up.dial(context.Background())
	if err != nil || c != mine {
		t.Fatalf("first attempt: %v, %v", c, err)
	}
	if c, err := up.dial(context.Background()); err == nil {
		t.Fatalf("second attempt gave %v", c)
	}
}

// With --host/--port the master dials the front end's session port.
func TestUpstreamDialsFrontEnd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	up, err := Options{Client: ln.Addr().String()}.upstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	c, err := up.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("the front end got %v, the master dialled from %v", in.RemoteAddr(), c.LocalAddr())
	}
}

// Without --host the master takes the next front end that proves it
// holds the key, however many peers without it are silent on the port:
// their handshakes proceed side by side with the owner's, so that it
// needs no more than its own round trips, far less than the handshake's
// deadline. An attempt that its context ends returns at once.
func TestFrontEndsAdmitKeyHolderPastSilentPeers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := wire.LinkConfig{Key: wire.Key{7}, HandshakeTimeout: time.Minute}
	gate := Options{Link: cfg}.frontEnds(ln)
	defer gate.Close()
	// More than wire.MaxPending: the oldest are let go to make room.
	for range wire.MaxPending + 50 {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), deadline)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	owner, err := net.DialTimeout("tcp", ln.Addr().String(), deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	go wire.NewLink(owner, wire.Ends{Kind: wire.FrontEndLink, Upper: true, Initiator: true}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	link, err := gate.Next(ctx)
	if err != nil {
		t.Fatalf("the owner was not admitted within 5s, its handshake's deadline a minute: %v", err)
	}
	defer link.Close()
	if link.RemoteAddr().String() != owner.LocalAddr().String() {
		t.Fatalf("admitted %v, the owner is %v", link.RemoteAddr(), owner.LocalAddr())
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := gate.Next(ctx); err == nil {
		t.Fatal("an attempt whose context ended returned a link")
	}
	gate.Close()
	if _, err := gate.Next(context.Background()); err == nil {
		t.Fatal("a closed gate returned a link")
	}
}

// A session port that cannot be bound fails, naming the address.
func TestUpstreamListenFails(t *testing.T) {
	_, err := Options{ListenHost: "256.0.0.1"}.upstream()
	if err == nil || !strings.Contains(err.Error(), "session port") {
		t.Fatalf("listening on a bad address: %v", err)
	}
	if !strings.Contains(err.Error(), "256.0.0.1") {
		t.Errorf("error does not name the address: %v", err)
	}
}
