// Package integration holds the end-to-end tests: real sdm processes,
// started by the built-in launcher and by real mpirun, mpiexec and srun.
package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/launcher"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// sdmBin is the sdm binary built once for all tests.
var sdmBin string

func TestMain(m *testing.M) {
	if addr := os.Getenv(localDialEnv); addr != "" {
		localDial(addr)
		os.Exit(0)
	}
	testenv.CloseInherited()
	// SDM_TEST_BINARY runs the tests against a given build, for profiling.
	if sdmBin = os.Getenv("SDM_TEST_BINARY"); sdmBin != "" {
		code := m.Run()
		testenv.StopSLURM()
		testenv.StopCluster()
		testenv.RemoveExamples()
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "sdm-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// sdm-server and sdm-rank beside sdm run the jobs' servers, as an
	// installed sdm's: make builds them, as it builds what ships.
	sdmBin = filepath.Join(dir, "sdm")
	build, cancel := testenv.CommandTimeout(5*time.Minute, "make", "-C", "..", "build", "BIN="+sdmBin)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	err = build.Run()
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "building sdm:", err)
		os.Exit(1)
	}
	code := m.Run()
	testenv.StopSLURM()
	testenv.StopCluster()
	testenv.RemoveExamples()
	os.RemoveAll(dir)
	os.Exit(code)
}

// job is a launched session that the test may end itself.
type job struct {
	*launcher.Session
	ended bool
}

// end quits the session and returns what End said, with the tail of
// the servers' log when End kept it, which a run on another machine
// leaves nowhere else to read.
func (j *job) end() error {
	j.ended = true
	err := j.End(10 * time.Second)
	if err == nil {
		return nil
	}
	_, kept, ok := strings.Cut(err.Error(), "(logs kept in ")
	kept, _, _ = strings.Cut(kept, ")")
	log, rerr := os.ReadFile(filepath.Join(kept, "servers.log"))
	if !ok || rerr != nil || len(log) == 0 {
		return err
	}
	const tail = 8 << 10
	log = log[max(0, len(log)-tail):]
	return fmt.Errorf("%w\nthe servers' log ends:\n%s", err, log)
}

// launch starts a local job of n ranks with the sim backend running
// program, and ends it when the test ends unless the test did.
func launch(t *testing.T, n, fanout int, program ...string) *job {
	t.Helper()
	return launchTree(t, launcher.Options{Size: n, Fanout: fanout}, program...)
}

// launchServing is launch with --members=serve: each server of the host
// debugs its own rank, linked to the first, instead of handing it over.
func launchServing(t *testing.T, n int, program ...string) *job {
	t.Helper()
	return launchTree(t, launcher.Options{Size: n, Members: "serve"}, program...)
}

// launchRanks is launch in the plain tree of one node per rank
// (--tree=ranks), where servers other than 0 have subtrees of their own.
func launchRanks(t *testing.T, n, fanout int, program ...string) *job {
	t.Helper()
	return launchTree(t, launcher.Options{Size: n, Fanout: fanout, RankTree: true}, program...)
}

// launchTree launches o's job of sim servers, and starts program on
// every rank.
func launchTree(t *testing.T, o launcher.Options, program ...string) *job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := o.Size
	o.Debugger, o.SDM, o.ConnectTimeout = "sim", sdmBin, 50*time.Second
	s, err := launcher.Launch(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{Session: s}
	t.Cleanup(func() {
		if j.ended {
			return
		}
		if err := j.end(); err != nil {
			t.Errorf("ending the session: %v", err)
		}
	})
	start := wire.Start{Program: program[0], Args: program[1:]}
	groups := command(t, s.Session.Command, wire.All(n), wire.OpStart, wire.MustEncode(start))
	if len(groups) == 0 || !okRanks(groups).Equal(wire.All(n)) {
		t.Fatalf("start: %s", describe(groups))
	}
	return j
}

type commandFunc func(context.Context, wire.RankSet, string, []byte, time.Duration) ([]wire.Group, error)

func command(t testing.TB, send commandFunc, ranks wire.RankSet, op string, body []byte) []wire.Group {
	t.Helper()
	groups, err := send(context.Background(), ranks, op, body, 20*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return groups
}

var (
	describe = testenv.Describe
	okRanks  = testenv.OKRanks
)

// gdbsFor is how many gdbs debug n ranks of one host: one per rank, or
// one per backend.RanksPerGDB() of them when the tests' servers share
// gdbs ($SDM_RANKS_PER_GDB, which they inherit).
func gdbsFor(n int) int {
	k := backend.RanksPerGDB()
	return (n + k - 1) / k
}

// piped starts cmd with its standard input and output as pipes, its
// standard error kept.
func piped(t testing.TB, cmd *exec.Cmd) (in io.WriteCloser, out io.ReadCloser, stderr *strings.Builder) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if out, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return in, out, stderr
}
