package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// launcherArgs turns a launcher's arguments into sdm's flags.
func launcherArgs(args ...string) []string {
	var flags []string
	for _, a := range args {
		flags = append(flags, "--launcher-arg="+a)
	}
	return flags
}

// placed reads which host each rank said it runs on ("[0-1] on h1")
// from a session's output.
func placed(t *testing.T, out string, n int) map[int]string {
	t.Helper()
	hosts := map[int]string{}
	for _, m := range regexp.MustCompile(`(?m)^\[([0-9,-]+)\] on (h[0-9]+)$`).FindAllStringSubmatch(out, -1) {
		ranks, err := wire.ParseRankSet(m[1])
		if err != nil {
			t.Fatalf("%q: %v", m[0], err)
		}
		ranks.Each(func(r int) bool {
			if h, dup := hosts[r]; dup {
				t.Errorf("rank %d said where it runs twice: %s and %s", r, h, m[2])
			}
			hosts[r] = m[2]
			return true
		})
	}
	if len(hosts) != n {
		t.Fatalf("%d of %d ranks said where they run:\n%s", len(hosts), n, out)
	}
	return hosts
}

// noStraysOn fails unless, within 10 s, nothing but the cluster's own
// daemons runs on the cluster's hosts.
func noStraysOn(t *testing.T, c *testenv.Cluster) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var strays []string
		for _, h := range c.Hosts {
			for _, pid := range c.Pids(t, h) {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				switch name := strings.TrimSpace(string(comm)); name {
				case "", "sshd", "slurmd", "slurmstepd":
				default:
					strays = append(strays, fmt.Sprintf("%s: %d %s", h, pid, name))
				}
			}
		}
		if len(strays) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running on the hosts 10 s after the session ended:\n%s", strings.Join(strays, "\n"))
		}
		time.Sleep(100 * time.Millisecond) // polling the process table: no event tells when a process elsewhere ends
	}
}

// Eight ranks over the four hosts of the emulated cluster, two each, under
// each launcher: every rank's server runs on its rank's host, the tree
// reaches the front end across the bridge, output carries the right ranks,
// breakpoints and stacks merge across hosts, and quit leaves nothing
// behind on any host.
func TestAcrossHosts(t *testing.T) {
	c := testenv.StartCluster(t)
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	const n = 8
	hosts := "h1:2,h2:2,h3:2,h4:2"
	for _, l := range []struct {
		rm, ring string
		args     []string
	}{
		{"openmpi", "ring", launcherArgs("--allow-run-as-root", "--mca", "plm_rsh_agent", c.RSH, "--host", hosts)},
		{"mpich", "ring-mpich", launcherArgs("-launcher", "rsh", "-launcher-exec", c.RSH, "-hosts", hosts, "-iface", c.Bridge)},
		{"slurm", "ring", launcherArgs("-N4", "--ntasks-per-node=2", "--mpi=pmix")},
	} {
		t.Run(l.rm, func(t *testing.T) {
			env := append(os.Environ(), "SLURM_CONF="+c.SLURMConf)
			flags := append([]string{"debug", "--rm", l.rm, "-n", strconv.Itoa(n), "--connect-timeout", "40s"}, l.args...)
			out, stderr, code := runWith(t, env, "", append(flags, "-e", "run", "-e", "wait", "--", "/bin/sh", "-c", "echo on $(hostname)")...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, stderr)
			}
			for r, h := range placed(t, out, n) {
				if want := c.Hosts[r/2]; h != want {
					t.Errorf("rank %d runs on %s, want %s:\n%s", r, h, want, out)
				}
			}
			out, stderr, code = runWith(t, env, "", append(flags, "-e", "break pass", "-e", "run", "-e", "wait", "-e", "stacks", "-e", "kill", "--", filepath.Join(bin, l.ring))...)
			for _, want := range []string{"[0-7] stopped in pass at examples/ring/ring.c:8 (breakpoint 1)\n", "[0-7] main at examples/ring/ring.c:29 (8 ranks)\n", "[0-7] pass at examples/ring/ring.c:8 (8 ranks)\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in (exit %d):\n%s%s", want, code, out, stderr)
				}
			}
			noStraysOn(t, c)
		})
	}
}

// sdm stacks --pid on an mpirun whose ranks run on the four hosts: the
// proctable (MPIR's, or Open MPI 5's PMIx server's) names the hosts, a
// server per host is started over real ssh, the hang is found, and the
// ranks run on untraced.
func TestStacksAcrossHosts(t *testing.T) {
	via := "(MPIR in "
	if !testenv.OpenMPIHasMPIR(t) {
		via = "(PMIx, job "
	}
	c := testenv.StartCluster(t)
	bin := testenv.Examples(t)
	const n = 8
	p, pid := detached(t, []string{"OMPI_MPIR_DO_NOT_WARN=1"}, "mpirun", "--allow-run-as-root", "--mca", "plm_rsh_agent", c.RSH,
		"--host", "h1:2,h2:2,h3:2,h4:2", "-np", strconv.Itoa(n), filepath.Join(bin, "hang"))
	p.lines(t, n, "rank ")
	logins := c.Logins(t)
	out, stderr, code := run(t, "", "stacks", "--pid", strconv.Itoa(pid), "--ssh", c.SSH, "--samples", "2", "--interval", "50ms")
	if code != 0 || !strings.Contains(stderr, "acquired 8 ranks from pid "+strconv.Itoa(pid)+" "+via) {
		t.Fatalf("exit %d, or not acquired %s…)\n%s%s", code, via, out, stderr)
	}
	for _, want := range []string{"[0-6] main at examples/hang/hang.c:27 (7 ranks)\n", "[7] compute at examples/hang/hang.c:12 (1 rank)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s%s", want, out, stderr)
		}
	}
	// h1, the first host, is not this machine either: every host's server
	// came in over ssh.
	for i, h := range c.Hosts {
		if got := c.Logins(t)[i]; got != logins[i]+1 {
			t.Errorf("%d ssh logins on %s during sdm stacks, want 1", got-logins[i], h)
		}
	}
	for _, r := range c.Procs(t, "hang") {
		if stopped, tracer := mpir.Traced(r); stopped || tracer != 0 {
			t.Errorf("rank process %d after sdm stacks: stopped %v, traced by %d", r, stopped, tracer)
		}
	}
	syscall.Kill(pid, syscall.SIGTERM) // mpirun ends its ranks on every host
	noStraysOn(t, c)
}

// sdm connect in a batch job that SLURM runs on h3, accepted by sdm listen
// here: the job's master dials this machine's address on the cluster's
// network, not a name that means the loopback on h3.
func TestConnectAcrossHosts(t *testing.T) {
	c := testenv.StartCluster(t)
	bin := testenv.Examples(t)
	dir := t.TempDir()
	env := append(os.Environ(), "SLURM_CONF="+c.SLURMConf, "SDM_CONNECT_DIR="+filepath.Join(dir, "connect"))
	listen := testenv.Command(t, sdmBin, "listen", "--accept-all", "--max", "1", "--wait", "60s",
		"-e", "break pass", "-e", "run", "-e", "wait", "-e", "stacks", "-e", "kill")
	listen.Env = env
	l := start(t, listen)
	batch := testenv.Command(t, "sbatch", "-w", "h3", "-N1", "-n2", "-o", filepath.Join(dir, "job.out"),
		"--wrap", sdmBin+" connect srun -n2 --mpi=pmix "+filepath.Join(bin, "ring"))
	batch.Env = env
	if out, err := batch.CombinedOutput(); err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	select {
	case <-l.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("sdm listen did not end within 90 s:\n%s", l.out.String())
	}
	job, _ := os.ReadFile(filepath.Join(dir, "job.out"))
	for _, want := range []string{"accepted ", "root@h3 job ", "; it connects to " + c.FrontEnd + ":", "[0-1] stopped in pass at examples/ring/ring.c:8 (breakpoint 1)\n", "[0-1] pass at examples/ring/ring.c:8 (2 ranks)\n"} {
		if !strings.Contains(l.out.String(), want) {
			t.Errorf("no %q in sdm listen's output (%v):\n%s\nthe job's:\n%s", want, l.err, l.out.String(), job)
		}
	}
	if want := "the job connects to " + c.FrontEnd + ":"; !strings.Contains(string(job), want) {
		t.Errorf("no %q in the job's output:\n%s", want, job)
	}
	noStraysOn(t, c)
}

// A front end that the cluster reaches (--target) and one that it does not
// (--forward), both through h1's real sshd: the launcher and the master
// run on h1, the ranks on h1 and h2.
func TestTargetAcrossHosts(t *testing.T) {
	c := testenv.StartCluster(t)
	bin := testenv.Examples(t)
	for _, mode := range []string{"--target", "--forward"} {
		t.Run(mode, func(t *testing.T) {
			before := c.Logins(t)[0]
			out, stderr, code := run(t, "", append(append([]string{"debug", mode, "h1", "--ssh", c.SSH, "--rm", "openmpi", "-n", "4"},
				launcherArgs("--allow-run-as-root", "--mca", "plm_rsh_agent", c.RSH, "--host", "h1:2,h2:2")...),
				"-e", "break pass", "-e", "run", "-e", "wait", "-e", "stacks", "-e", "kill", "--", filepath.Join(bin, "ring"))...)
			if want := "[0-3] pass at examples/ring/ring.c:8 (4 ranks)\n"; !strings.Contains(out, want) {
				t.Errorf("no %q in (exit %d):\n%s%s", want, code, out, stderr)
			}
			if logins := c.Logins(t)[0] - before; logins < 1 {
				t.Errorf("no ssh login on h1")
			}
			noStraysOn(t, c)
		})
	}
}

// A host cut off from the others mid-session: its ranks are answered for
// within seconds, by an error that names the host, and the ranks of the
// other hosts answer as before, but for those whose servers hang below
// the host's in the tree of ranks.
func TestHostCutOff(t *testing.T) {
	c := testenv.StartCluster(t)
	bin := testenv.Examples(t)
	const n = 8
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := launcher.Launch(ctx, launcher.Options{RM: "openmpi", Size: n, Debugger: "gdb-mi", GDB: "lazy", SDM: sdmBin,
		Program: filepath.Join(bin, "ring"), ConnectTimeout: time.Minute,
		LauncherArgs: []string{"--allow-run-as-root", "--mca", "plm_rsh_agent", c.RSH, "--host", "h1:2,h2:2,h3:2,h4:2"}})
	if err != nil {
		t.Fatal(err)
	}
	// Ranks 2 and 3 run on h2, whose leader (2) hangs below the master,
	// since the tree's nodes are hosts: h2 cut off silences them alone.
	all, h2 := wire.All(n), wire.Range(2, 3)
	others := all.Minus(h2)
	if g := command(t, s.Command, all, wire.OpStatus, nil); !okRanks(g).Equal(all) {
		t.Fatalf("status before: %s", describe(g))
	}
	// The servers with children listen on their host's address only.
	listeners := 0
	for i, h := range c.Hosts {
		out, err := testenv.Command(t, "nsenter", "--net=/run/netns/"+h, "ss", "-Hltnp").Output()
		if err != nil {
			t.Fatalf("ss on %s: %v", h, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 3 && (strings.Contains(line, `"sdm"`) || strings.Contains(line, `"sdm-server"`)) {
				listeners++
				if !strings.HasPrefix(f[3], c.Addrs[i]+":") {
					t.Errorf("a server on %s listens on %s, not on %s:\n%s", h, f[3], c.Addrs[i], line)
				}
			}
		}
	}
	if listeners == 0 {
		t.Error("no server listens on any host")
	}
	link := func(state string) {
		if out, err := testenv.Command(t, "ip", "link", "set", c.Links[1], state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v\n%s", c.Links[1], state, err, out)
		}
	}
	link("down")
	start := time.Now()
	groups, err := s.Command(ctx, all, wire.OpStatus, nil, 20*time.Second)
	took := time.Since(start)
	link("up")
	if err != nil {
		t.Fatal(err)
	}
	if !okRanks(groups).Equal(others) || !groupsWith(groups, wire.StatusTimeout).Equal(h2) ||
		!strings.Contains(describe(groups), "server 2 on h2 not responding") || took > 10*time.Second {
		t.Errorf("status with h2 cut off, after %v: %s", took, describe(groups))
	}
	if err := s.End(20 * time.Second); err != nil {
		t.Logf("ending the session: %v", err) // h2's servers may still be on their way back
	}
	noStraysOn(t, c)
}

// The guide's example across nodes (docs/CLUSTERS.md) runs as written on
// the emulated cluster, once its environment is sourced, and prints what
// the guide shows.
func TestGuideAcrossNodes(t *testing.T) {
	c := testenv.StartCluster(t)
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	readme, err := os.ReadFile(filepath.Join("..", "docs", "CLUSTERS.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Across nodes\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	command, rest, ok3 := strings.Cut(block, "```\n")
	_, shown, ok4 := strings.Cut(rest, "```\n")
	shown, _, ok5 := strings.Cut(shown, "```\n")
	if !ok || !ok2 || !ok3 || !ok4 || !ok5 {
		t.Fatal("docs/CLUSTERS.md has no example across nodes with its output")
	}
	command = strings.ReplaceAll(strings.TrimSpace(command), "\\\n", " ")
	cmd := testenv.Command(t, "sh", "-c", ". "+c.Env+" && cd "+bin+" && "+command)
	// Root, as the tests run, must say so to Open MPI; a user need not.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(sdmBin)+":"+os.Getenv("PATH"),
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(shown), "\n") {
		if !strings.Contains(string(out), line+"\n") {
			t.Errorf("no %q in:\n%s", line, out)
		}
	}
	noStraysOn(t, c)
}
