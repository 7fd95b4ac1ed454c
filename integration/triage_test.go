package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// stacks in a session of simulated ranks samples them through the tree:
// the classes of ranks whose stacks agree, the smaller one an outlier,
// none moved (the simulator's stacks never do), and a rank set with one
// rank per class.
func TestStacksClassesOfSimulatedRanks(t *testing.T) {
	out, stderr, code := run(t, "", "debug", "-n", "8", "--backend", "sim",
		"-e", "stacks --samples 3 --interval 10ms", "--", "groups", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"[0-7] main at groups.c:9 (8 ranks)\n",
		"3 classes, biggest first:\n",
		"  [0,3,6] 3 ranks: work_0_3 at groups.c:3\n",
		// Each told by where it parts from the biggest class.
		"  [1,4,7] 3 ranks: work_1_1 at groups.c:101 > … > work_1_3 at groups.c:103\n",
		"  [2,5] 2 ranks: work_2_1 at groups.c:201 > … > work_2_3 at groups.c:203  <- outlier\n",
		"progress over 3 samples: no rank moved; [0-7] did not\n",
		"one rank per class: [0,1,2] where\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	out, stderr, code = run(t, "", "debug", "-n", "8", "--backend", "sim", "--json",
		"-e", "stacks --samples 2", "--", "hang")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var reply struct {
		Groups []struct {
			Ranks string `json:"ranks"`
			Op    string `json:"op"`
			Value struct {
				Classes []struct {
					Ranks   string `json:"ranks"`
					Outlier bool   `json:"outlier"`
				} `json:"classes"`
				Moved      string `json:"moved"`
				Still      string `json:"still"`
				Suggestion string `json:"suggestion"`
			} `json:"value"`
		} `json:"groups"`
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"name":"stacks"`) {
			if err := json.Unmarshal([]byte(line), &reply); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(reply.Groups) != 1 || reply.Groups[0].Op != "stacks" || reply.Groups[0].Ranks != "0-7" {
		t.Fatalf("stacks reply: %+v\n%s", reply, out)
	}
	v := reply.Groups[0].Value
	if len(v.Classes) != 2 || v.Classes[0].Ranks != "0-6" || v.Classes[0].Outlier || v.Classes[1].Ranks != "7" ||
		!v.Classes[1].Outlier || v.Moved != "" || v.Still != "0-7" || v.Suggestion != "[0,7] where" {
		t.Fatalf("stacks value: %+v\n%s", v, out)
	}
}

// Ranks stopped under gdb answer the samples through gdb; a session
// attached through the starter suggests attaching to one rank per class,
// and that command takes gdb to those ranks only.
func TestStacksUnderGDBSuggestAttach(t *testing.T) {
	bin := testenv.Examples(t)
	testenv.RequireTool(t, "gdb")
	job, starter := detached(t, nil, filepath.Join(bin, "mpir-starter-partial"), "-n", "4", "--hang")
	job.lines(t, 1, "started 4 ranks")
	pid := strconv.Itoa(starter)
	out, stderr, code := run(t, "", "attach", "--gdb", "eager", "--pid", pid, "--stop", "-e", "stacks --samples 2 --interval 10ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	suggestion := "sdm attach --pid " + pid + " --ranks 0,3"
	for _, want := range []string{"2 classes, biggest first:\n", "  [3] 1 rank: rank_main at examples/mpir-starter/mpir-starter.c:110 > compute_forever at",
		"progress: one sample per rank (ranks stopped under gdb answer one), which cannot tell which ranks move\n", "one rank per class: " + suggestion + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	free(t, children(starter)...)

	out, stderr, code = run(t, "", strings.Fields(suggestion)[1:]...)
	if code != 0 || !strings.Contains(out, "[0,3] attached: running") || !strings.Contains(out, "[1-2] attached: not attached") {
		t.Fatalf("%s: exit %d\n%s%s", suggestion, code, out, stderr)
	}
	free(t, children(starter)...)
}

// sdm stacks refuses what it cannot do before it touches the job.
func TestStacksCommandRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stacks"}, "--pid PID of the job's starter"},
		{[]string{"stacks", "--pid", "1", "--samples", "0"}, "--samples 0: want a count from 1 to 1000"},
		{[]string{"stacks", "--pid", "1", "--interval", "1h"}, "--interval 1h0m0s: want a duration up to 1m0s"},
		{[]string{"stacks", "--pid", "1", "-e", "where"}, "sdm stacks runs no other commands"},
		{[]string{"stacks", "--pid", "1", "extra"}, `unexpected "extra"`},
	} {
		if _, stderr, code := run(t, "", c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, stderr)
		}
	}
}

// sdm stacks on a running Open MPI job: the tree, the classes and the
// suggestion come from samples, without gdb, and the ranks run on,
// untraced, once it ends.
func TestStacksCommandOnOpenMPI(t *testing.T) {
	const n = 4
	pid := hungMpirun(t, n)
	out, stderr, code := run(t, "", "stacks", "--pid", strconv.Itoa(pid), "--samples", "2", "--interval", "20ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"[0-2] PMPI_Recv from libmpi.so", "[3] compute at ", "progress over 2 samples",
		// The outlier is told by where it parts from the others.
		"  [3] 1 rank: main at examples/hang/hang.c:25 > compute at examples/hang/hang.c:12  <- outlier\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	// Ranks 0-2 spin in Open MPI's progress loop, and a sample may catch
	// one of them in a callback of it: a class of its own, under MPI_Recv.
	classes := regexp.MustCompile(`\n([23]) classes, biggest first:\n`).FindStringSubmatch(out)
	suggested := regexp.MustCompile(`one rank per class: sdm attach --pid ` + strconv.Itoa(pid) + ` --ranks 0(,[12])?,3\n`).FindStringSubmatch(out)
	if classes == nil || suggested == nil || (classes[1] == "3") != (suggested[1] != "") {
		t.Errorf("want the waiting ranks' class (or two, split inside MPI) and rank 3's, one rank of each suggested:\n%s", out)
	}
	// The main threads come first, before Open MPI's progress threads.
	if !strings.HasPrefix(out[strings.Index(out, "\n[")+1:], "[0-2] main at ") {
		t.Errorf("the tree does not start with the main threads:\n%s", out)
	}
	for _, rank := range rankPids(t, pid, n) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", rank))
		if err != nil || !strings.Contains(string(status), "\nTracerPid:\t0\n") || strings.Contains(string(status), "\nState:\tT") {
			t.Errorf("rank process %d after sdm stacks: %v\n%s", rank, err, status)
		}
	}
	free(t, append([]int{pid}, rankPids(t, pid, n)...)...)
}
