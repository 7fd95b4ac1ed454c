package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// Under mpirun, with gdb started at once (the servers' default), the
// servers of this host hand their ranks to the first (--members=hand): it
// debugs every rank, while each rank's gdb, and the MPI program gdb
// starts, are its own server's children, with the environment mpirun
// gave that server. --members=serve debugs the same ranks the same way,
// each server its own. Started as sdm-rank (lean), the members stay
// sdm-rank and the first server becomes sdm-server.
func TestMembersHandTheirGDBsOver(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	mpirun := testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	for _, members := range []string{"hand", "serve", "lean"} {
		t.Run(members, func(t *testing.T) {
			const n = 4
			s := newSession(t, n)
			master := s.master()
			serverArgs := []string{sdmBin, "--routing_file=" + s.routes, "--key-file=" + s.keyFile, "--debugger=gdb-mi", "--members=" + members, "--debug"}
			if members == "lean" {
				serverArgs = []string{filepath.Join(filepath.Dir(sdmBin), "sdm-rank"), "--members=hand", "--routing_file=" + s.routes, "--key-file=" + s.keyFile}
			}
			mpi := testenv.Command(t, mpirun, append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(n)}, serverArgs...)...)
			// gdb is started without it, its programs with it.
			mpi.Env = append(os.Environ(), "PYTHONUNBUFFERED=kept")
			servers := start(t, mpi)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs := s.join(ctx, n)
			all := wire.All(n)
			body := wire.MustEncode(wire.Start{Program: filepath.Join(bin, "hang")})
			if groups := command(t, cs.Command, all, wire.OpStart, body); !okRanks(groups).Equal(all) {
				t.Fatalf("start: %s", describe(groups))
			}
			command(t, cs.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "compute"}))
			command(t, cs.Command, all, wire.OpBreak, wire.MustEncode(wire.Break{Location: "MPI_Recv"}))
			command(t, cs.Command, all, wire.OpRun, nil)
			stoppedAll(t, cs, all)
			// The last rank computes, the others wait for it.
			var computing wire.RankSet
			for _, g := range command(t, cs.Command, all, wire.OpWhere, nil) {
				var st wire.Stack
				if g.Status == wire.StatusOK && wire.Decode(g.Body, &st) == nil && len(st.Frames) > 0 && st.Frames[0].Func == "compute" {
					computing = computing.Union(g.Ranks)
				}
			}
			if !computing.Equal(wire.Single(n - 1)) {
				t.Fatalf("ranks %v stopped in compute, want %d", computing, n-1)
			}

			// Each rank's program runs under a gdb whose parent is a server
			// of this mpirun holding the same rank in its environment; when
			// ranks share gdbs, under one of gdbsFor(n) gdbs, each started
			// by a server of this mpirun, with its own rank's environment.
			shared := members != "serve" && gdbsFor(n) < n
			ranks, gdbs := map[string]bool{}, map[int]bool{}
			for _, prog := range processesNamed(t, "hang") {
				gdb := parentOf(t, prog)
				server := parentOf(t, gdb)
				if parentOf(t, server) != servers.cmd.Process.Pid {
					continue // another job's
				}
				want, got := environ(t, server, "OMPI_COMM_WORLD_RANK"), environ(t, prog, "OMPI_COMM_WORLD_RANK")
				if want == "" || got == "" || got != want && !shared {
					t.Errorf("the program %d of server %d (rank %q) has rank %q", prog, server, want, got)
				}
				if py, gdbPy := environ(t, prog, "PYTHONUNBUFFERED"), environ(t, gdb, "PYTHONUNBUFFERED"); py != "kept" || gdbPy != "" {
					t.Errorf("rank %s's program has PYTHONUNBUFFERED=%q (want kept), its gdb %q (want none)", want, py, gdbPy)
				}
				ranks[got], gdbs[gdb] = true, true
				if members != "lean" || shared {
					continue
				}
				if comm, wantComm := commOf(t, server), map[bool]string{true: "sdm-server", false: "sdm-rank"}[got == "0"]; comm != wantComm {
					t.Errorf("rank %s's server runs %s, want %s", got, comm, wantComm)
				}
			}
			if len(ranks) != n {
				t.Fatalf("programs of ranks %v run under their servers' gdbs, want 0-%d", ranks, n-1)
			}
			if want := map[bool]int{false: n, true: gdbsFor(n)}[shared]; len(gdbs) != want {
				t.Fatalf("the programs run under %d gdbs, want %d", len(gdbs), want)
			}
			handed := strings.Count(servers.out.String(), "to server 0")
			if want := map[string]int{"hand": n - 1, "serve": 0}[members]; members != "lean" && handed != want {
				t.Errorf("%d ranks handed over to server 0, want %d", handed, want)
			}
			if groups, err := cs.Quit(ctx, 10*time.Second); err != nil || !okRanks(groups).Equal(all) {
				t.Fatalf("quit: %s %v", describe(groups), err)
			}
			// mpirun's status tells of the MPI programs, killed by the
			// quit: only its end is the servers'.
			for _, p := range []*proc{servers, master} {
				select {
				case <-p.done:
				case <-ctx.Done():
					t.Fatalf("%s still runs after quit", p.cmd.Args[0])
				}
			}
			if master.err != nil {
				t.Fatalf("the master after quit: %v", master.err)
			}
		})
	}
}

// sdm debug's own session (gdb lazy, the program named to the servers
// to read ahead) hands the ranks to the host's first server from
// members that stay in sdm-rank's start in C: an argument of the
// launch that the start does not read would make every member a server
// in Go of its own, and 64 ranks take three times as long to come up.
func TestDefaultSessionMembersStayLean(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	const n = 4
	cmd := testenv.Command(t, sdmBin, "debug", "-n", strconv.Itoa(n), "--timeout", "60s", "--", filepath.Join(testenv.Examples(t), "plain"))
	in, out, stderr := piped(t, cmd)
	// The console answers once every rank is up.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "focus 0-"+strconv.Itoa(n-1) {
				ready <- true
				io.Copy(io.Discard, out)
			}
		}
		close(ready)
	}()
	io.WriteString(in, "focus\n")
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("sdm debug ended before its ranks were up: %v\n%s", cmd.Wait(), stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the ranks were not up within 60 s\n%s", stderr.String())
	}
	names := map[string]int{}
	for _, pid := range sdmBelow(cmd.Process.Pid) {
		names[commOf(t, pid)]++
	}
	if names["sdm-rank"] != n-1 {
		t.Errorf("the servers under sdm debug run %v, want %d members still in sdm-rank", names, n-1)
	}
	io.WriteString(in, "quit\n")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("sdm debug: %v\n%s", err, stderr.String())
	}
}

// commOf is the command pid runs.
func commOf(t *testing.T, pid int) string {
	t.Helper()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(comm))
}

// processesNamed lists the processes whose command is name.
func processesNamed(t *testing.T, name string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parentOf is pid's parent, 0 when pid is gone.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// environ is the value of name in pid's environment.
func environ(t *testing.T, pid int, name string) string {
	t.Helper()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("environment of %d: %v", pid, err)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
