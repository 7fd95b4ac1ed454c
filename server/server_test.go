package server

import (
	"github.com/sdm-hpc/sdm/master"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/internal/handover"
	"github.com/sdm-hpc/sdm/wire"
)

// keyFile writes a session key to a private file, and leaves no key in
// the environment (where the server would execute the test again).
func keyFile(t *testing.T) (string, wire.Key) {
	t.Helper()
	for _, name := range []string{wire.KeyEnv, handover.KeyFDEnv, handover.ListenFDEnv} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := wire.WriteKeyFile(path, key); err != nil {
		t.Fatal(err)
	}
	return path, key
}

func TestTheMasterReachesTheFrontEndAsItsProxySays(t *testing.T) {
	for _, c := range []struct {
		cfg                Config
		client, listenHost string
		port               int
		stdio              bool
	}{
		{cfg: Config{Proxy: "tcp", Host: "fe", Port: 4000}, client: "fe:4000"},
		{cfg: Config{Proxy: "tcp", Port: 4000}, listenHost: "0.0.0.0", port: 4000},
		{cfg: Config{Proxy: "stdio", Port: 4000}, stdio: true},
	} {
		c.cfg.ListenHost = "0.0.0.0"
		if err := c.cfg.master(); err != nil {
			t.Fatal(err)
		}
		o := c.cfg.Options
		if o.Client != c.client || (c.port != 0 && (o.ListenHost != c.listenHost || o.ListenPort != c.port)) || (o.Stdio != nil) != c.stdio {
			t.Errorf("proxy %s host %q: client %q, listen %s:%d, stdio %v", c.cfg.Proxy, c.cfg.Host, o.Client, o.ListenHost, o.ListenPort, o.Stdio != nil)
		}
	}
	c := Config{Proxy: "udp"}
	if err := c.master(); exit.Status(err) != 2 || err.Error() != "--proxy=udp: want tcp or stdio" {
		t.Errorf("--proxy=udp: %v (status %d), want a usage error", err, exit.Status(err))
	}
	c = Config{Proxy: "tcp", GenerateRoutes: "n1,n2"}
	if c.master(); strings.Join(c.Generate, " ") != "n1 n2" {
		t.Errorf("generated routes for %q, want n1 and n2", c.Generate)
	}
}

func TestARankServerHasTheBackendAndTheRoutesItsFlagsName(t *testing.T) {
	c := Config{Debugger: "sim", DebuggerPath: "/opt/gdb", RoutesFrom: "publish"}
	c.RoutingFile, c.Fanout = "rf", 4
	o, err := c.rankServer(3)
	if err != nil {
		t.Fatal(err)
	}
	if o.Index != 3 || o.RoutingFile != "rf" || o.Fanout != 4 || !o.RoutesFrom.Publish || o.RoutesFrom.Compute != nil {
		t.Errorf("rank server options %+v", o)
	}
	if b, err := o.NewBackend(backend.Config{}); err != nil || b == nil {
		t.Errorf("NewBackend: %v, %v; want the simulated backend", b, err)
	}
	for _, bad := range []Config{
		{Debugger: "lldb", RoutesFrom: "file"},
		{Debugger: "sim", RoutesFrom: "carrier-pigeon"},
		{Debugger: "sim", RoutesFrom: "slurm"},
	} {
		if _, err := bad.rankServer(0); err == nil {
			t.Errorf("--debugger %s --routes_from %s: no error", bad.Debugger, bad.RoutesFrom)
		}
	}
}

// --members says whether a host's servers hand their ranks to its
// first: by default, however gdb starts, and with the simulated backend,
// in a tree of hosts only (routing.Hands).
func TestMembersHandTheirRanksAsTheFlagsSay(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		hand bool
	}{
		{Config{Debugger: "sim"}, true},
		{Config{Debugger: "gdb-mi", GDB: "eager"}, true},
		{Config{Debugger: "gdb-mi", GDB: "eager", Members: "serve"}, false},
		{Config{Debugger: "gdb-mi", GDB: "lazy"}, true},
		{Config{Debugger: "gdb-mi", GDB: "lazy", Members: "serve"}, false},
		{Config{Options: master.Options{RankTree: true}, Debugger: "sim", Members: "hand"}, false},
	} {
		c.cfg.RoutesFrom = "file"
		o, err := c.cfg.rankServer(1)
		if err != nil {
			t.Fatal(err)
		}
		if (o.Handover != nil) != c.hand || (c.cfg.spawner != nil) != (c.hand && c.cfg.Debugger == "gdb-mi") {
			t.Errorf("%+v: handover %v, spawner %v; want handing over %v", c.cfg, o.Handover != nil, c.cfg.spawner != nil, c.hand)
		}
	}
	bad := Config{Debugger: "sim", RoutesFrom: "file", Members: "share"}
	if _, err := bad.rankServer(0); err == nil || exit.Status(err) != 2 || !strings.Contains(err.Error(), "--members=share: want hand or serve") {
		t.Errorf("--members=share: %v", err)
	}
}

func TestCommonNamesTheServerAndTakesItsKey(t *testing.T) {
	path, key := keyFile(t)
	c := Config{KeyFile: path, Index: 5, Debug: 1}
	index, err := c.common()
	if err != nil {
		t.Fatal(err)
	}
	if index != 5 || c.Link.Key != key || c.Link.Log == nil || c.Trace != c.Log || c.Log.Prefix() != "sdm[rank 5] " {
		t.Errorf("index %d, key taken %v, link log %v, trace %v, log prefix %q", index, c.Link.Key == key, c.Link.Log != nil, c.Trace != nil, c.Log.Prefix())
	}
	m := Config{KeyFile: path, Master: true}
	if index, err := m.common(); err != nil || index != -1 || m.Log.Prefix() != "sdm[master] " || m.Trace != nil {
		t.Errorf("master: index %d, %v, log prefix %q, trace %v", index, err, m.Log.Prefix(), m.Trace != nil)
	}
}

// A master whose flags are wrong says so before it starts anything.
func TestRunRefusesABadProxy(t *testing.T) {
	path, _ := keyFile(t)
	c := Config{KeyFile: path, Master: true, Proxy: "udp"}
	if err := Run(c); exit.Status(err) != 2 {
		t.Errorf("Run with --proxy=udp: %v, want a usage error", err)
	}
	r := Config{KeyFile: path, Index: 2, Debugger: "lldb", RoutesFrom: "file"}
	if err := Run(r); exit.Status(err) != 2 || !strings.HasPrefix(err.Error(), "rank 2: ") {
		t.Errorf("Run with --debugger lldb: %v, want a usage error naming rank 2", err)
	}
	r = Config{KeyFile: path, Index: 2, Debugger: "sim", RoutesFrom: "carrier-pigeon"}
	if err := Run(r); exit.Status(err) != 2 || !strings.Contains(err.Error(), "carrier-pigeon") {
		t.Errorf("Run with --routes_from carrier-pigeon: %v, want a usage error", err)
	}
}
