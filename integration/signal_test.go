package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/member"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// SIGTERM stops a master and its servers promptly, even when the front end
// never came (PTP's servers ignored it), and they exit cleanly.
func TestSIGTERMStopsEveryone(t *testing.T) {
	const n = 3
	s := newSession(t, n)
	master := start(t, testenv.Command(t, sdmBin, "--master", "--port="+strconv.Itoa(freePort(t)),
		"--routing_file="+s.routes, "--key-file="+s.keyFile, "--debug"))
	procs := []*proc{master}
	for i := 0; i < n; i++ {
		procs = append(procs, s.startServer(append(s.serverArgs(), "--debug"), i))
	}
	// The tree is up once its parents have logged every server joining.
	joined := func() int {
		total := 0
		for _, p := range procs {
			total += p.joined()
		}
		return total
	}
	deadline := time.After(10 * time.Second)
	for joined() < n {
		select {
		case <-anyOutput:
		case <-deadline:
			t.Fatalf("%d of %d servers joined within 10s", joined(), n)
		}
	}
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("%s after SIGTERM: %v", p.cmd.Args[0], p.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("still running 5s after SIGTERM")
		}
	}
}

// sdm ended by a signal in the middle of a session (timeout's SIGTERM, a
// closed terminal's SIGHUP, a SIGINT to a script) ends its job with it,
// under every launcher: nothing of the session stays behind.
func TestSignalEndsTheJob(t *testing.T) {
	bin := testenv.Examples(t)
	byRM := map[string]adapter{}
	for _, a := range adapters(t) {
		byRM[a.rm] = a
	}
	for _, c := range []struct {
		rm  string
		sig syscall.Signal
	}{
		{"local", syscall.SIGTERM}, {"openmpi", syscall.SIGHUP}, {"mpich", syscall.SIGTERM},
		{"slurm", syscall.SIGHUP}, {"openmpi", syscall.SIGINT},
	} {
		t.Run(c.rm+"/"+c.sig.String(), func(t *testing.T) {
			a := byRM[c.rm]
			a.prepare(t)
			args := []string{"debug", "-n", "4", "--rm", a.rm}
			for _, arg := range a.args {
				args = append(args, "--launcher-arg="+arg)
			}
			if a.force {
				args = append(args, "--force")
			}
			args = append(args, "--", filepath.Join(bin, a.program))
			cmd := testenv.Command(t, sdmBin, args...)
			tmp := t.TempDir()
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			// Commands come from a pipe that stays open and silent: sdm
			// waits for them when the signal comes.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd.Stdin = r
			p := start(t, cmd)
			r.Close()
			// The session is up once every rank's gdb runs (what sdm
			// prints may wait in a buffer until it ends).
			var dir string
			for limit := time.Now().Add(60 * time.Second); ; {
				if dirs, _ := filepath.Glob(filepath.Join(tmp, "sdm-*")); len(dirs) == 1 {
					dir = dirs[0]
					if up(dir, sessionProcesses([]byte(launcher.SessionEnv+"="+dir+"\x00")), 4) {
						break
					}
				}
				if time.Now().After(limit) {
					t.Fatalf("the session did not come up within 60s: %s", p.out.String())
				}
				select {
				case <-p.done:
					t.Fatalf("sdm ended before the session came up: %v", p.err)
				case <-time.After(100 * time.Millisecond): // polling the process table, as noStrays does
				}
			}
			p.cmd.Process.Signal(c.sig)
			select {
			case <-p.done:
			case <-time.After(20 * time.Second):
				t.Fatalf("sdm still runs 20s after %v", c.sig)
			}
			var exit *exec.ExitError
			if !errors.As(p.err, &exit) || exit.ExitCode() != 128+int(c.sig) {
				t.Errorf("sdm ended by %v: %v, want exit status %d", c.sig, p.err, 128+int(c.sig))
			}
			noStrays(t, dir)
		})
	}
}

// up says whether a session of n ranks on this host (its directory dir,
// its processes procs) is up: its n servers run and, when they hand
// their ranks over, the n-1 members have joined the first (a signal
// before that finds members still dialling, and a launcher still
// starting the job). Their command lines say "gdb" (--debugger=gdb-mi).
func up(dir string, procs []string, n int) bool {
	all := strings.Join(procs, "\n")
	if strings.Count(all, "gdb") < n {
		return false
	}
	if !strings.Contains(all, "--members=hand") {
		return true
	}
	key, err := wire.ReadKeyFile(filepath.Join(dir, "key"))
	if err != nil {
		return false
	}
	unix, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return false
	}
	// The first server's end of each member's connection: a connected
	// socket (state 03) named as its listening one.
	joined, leader := 0, member.Address(key, 0)
	for _, line := range strings.Split(string(unix), "\n") {
		f := strings.Fields(line)
		if len(f) == 8 && f[5] == "03" && f[7] == leader {
			joined++
		}
	}
	return joined >= n-1
}
