package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// sshd runs a real sshd on a free port of this machine, with a throwaway
// host key, that lets root in with a throwaway key; it returns the ssh
// command line that logs in, and the sshd process (whose log tells what
// it forwarded).
func sshd(t *testing.T) (string, *proc) {
	t.Helper()
	daemon := testenv.RequireTool(t, "/usr/sbin/sshd", "sshd")
	testenv.RequireTool(t, "ssh")
	keygen := testenv.RequireTool(t, "ssh-keygen")
	dir := t.TempDir()
	for _, k := range []string{"host", "user"} {
		out, err := testenv.Command(t, keygen, "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "user.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	port := freePort(t)
	config := filepath.Join(dir, "sshd_config")
	os.WriteFile(config, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
LogLevel DEBUG1
`, port, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))), 0o600)
	p := start(t, testenv.Command(t, daemon, "-D", "-e", "-f", config))
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen within 10s:\n%s", p.out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling a port: no event tells when sshd listens
	}
	ssh := fmt.Sprintf("ssh -p %d -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR",
		port, filepath.Join(dir, "user"))
	return ssh, p
}

// onTarget describes a job of n ranks of ring under mpirun on a target
// reached over a real sshd of this machine, with the session port
// forwarded; the sshd is there for its log.
func onTarget(t *testing.T, n int) (launcher.Options, *proc) {
	t.Helper()
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	ssh, daemon := sshd(t)
	o := adapter{rm: "openmpi", program: "ring", args: []string{"--oversubscribe"}}.options(bin, n)
	o.Target, o.SSH, o.Forward = "root@127.0.0.1", ssh, true
	return o, daemon
}

// The launcher and the master run on a target reached with ssh, and the
// master reaches the front end through a port ssh forwards.
func TestTargetOverSSHWithForwarding(t *testing.T) {
	const n = 2
	o, daemon := onTarget(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := launcher.Launch(ctx, o)
	if err != nil {
		t.Fatalf("%v\nsshd:\n%s", err, daemon.out.String())
	}
	all := wire.All(n)
	command(t, s.Command, all, wire.OpStart, wire.MustEncode(wire.Start{Program: o.Program}))
	command(t, s.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "pass"}))
	command(t, s.Command, all, wire.OpRun, nil)
	stoppedAll(t, s.Session, all)
	dir := s.Dir
	if err := s.End(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(daemon.out.String(), "tcpip-forward") {
		t.Errorf("sshd forwarded nothing:\n%s", daemon.out.String())
	}
	noStrays(t, dir)

	// The checks run on the target too.
	o.Program = "/no/such/program"
	_, err = launcher.Launch(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "on root@127.0.0.1: the program /no/such/program does not exist") {
		t.Fatalf("a program missing on the target: %v", err)
	}
}
