package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/report"
	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// reportUnder is the start of an sdm report command line of n ranks under
// rm, its report written as dir/run.html and dir/run.json.
func reportUnder(rm string, n int, dir string, extra ...string) []string {
	args := []string{"report", "--rm", rm, "-n", strconv.Itoa(n), "--timeout", "60s",
		"--out", filepath.Join(dir, "run.html"), "--json", filepath.Join(dir, "run.json")}
	if rm == "openmpi" {
		args = append(args, "--launcher-arg=--oversubscribe")
	}
	return append(args, extra...)
}

// readReport reads the JSON report in dir, and its HTML page.
func readReport(t *testing.T, dir string) (*report.Report, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("run.json: %v\n%s", err, data)
	}
	page, err := os.ReadFile(filepath.Join(dir, "run.html"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != report.Version {
		t.Errorf("the report's version is %d, want %d", r.Version, report.Version)
	}
	return &r, string(page)
}

// classesOf are the classes of a snapshot's stacks, by ranks.
func classesOf(t *testing.T, s *report.Shot) map[string]string {
	t.Helper()
	var v struct {
		Classes []struct{ Ranks, Label string } `json:"classes"`
	}
	if s == nil || json.Unmarshal(s.Stacks, &v) != nil {
		t.Errorf("no stacks in the snapshot %+v", s)
		return nil
	}
	m := map[string]string{}
	for _, c := range v.Classes {
		m[c.Ranks] = c.Label
	}
	return m
}

func endsOf(r *report.Report) string {
	var ends []string
	for _, e := range r.Exits {
		ends = append(ends, fmt.Sprintf("[%s] %s", e.Ranks, e.What))
	}
	return strings.Join(ends, "; ")
}

// A rank that crashes under sdm report is caught at the fault, under lazy
// and eager gdb: its stack with arguments and locals, every other rank's
// stacks, and then what --on-crash says; sdm report exits as a process
// that SIGSEGV killed.
func TestReportCrash(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun")
	crash := filepath.Join(testenv.Examples(t), "crash")
	for _, c := range []struct{ gdb, onCrash, ends string }{
		{"lazy", "stop", "[0-3] killed"},
		{"eager", "stop", "[0-3] killed"},
		{"lazy", "continue", "[1] killed by SIGSEGV"},
	} {
		t.Run(c.gdb+"-"+c.onCrash, func(t *testing.T) {
			dir := t.TempDir()
			args := append(reportUnder("openmpi", 4, dir, "--gdb", c.gdb, "--on-crash", c.onCrash), "--", crash)
			var out, stderr string
			var code int
			if c.onCrash == "continue" {
				// The others work on for a minute: once rank 1 is gone,
				// SIGTERM ends them.
				p := start(t, testenv.Command(t, sdmBin, args...))
				p.lines(t, 1, "sdm report: [1] killed by SIGSEGV")
				p.cmd.Process.Signal(syscall.SIGTERM)
				<-p.done
				out, code = p.out.String(), p.cmd.ProcessState.ExitCode()
			} else {
				out, stderr, code = run(t, "", args...)
			}
			if code != 128+11 {
				t.Fatalf("exit %d, want 139\n%s\n%s", code, out, stderr)
			}
			r, page := readReport(t, dir)
			if r.Outcome != "crashed" || len(r.Crashes) != 1 {
				t.Fatalf("outcome %q, %d crashes; want crashed, 1\n%s", r.Outcome, len(r.Crashes), out)
			}
			cr := r.Crashes[0]
			if cr.Ranks != "1" || cr.Signal != "SIGSEGV" || cr.Frame.Func != "fail" || cr.Frame.Line != 12 {
				t.Errorf("crash %+v, want [1] SIGSEGV in fail at line 12", cr)
			}
			var stack wire.Trace
			if len(cr.Stack) != 1 || json.Unmarshal(cr.Stack[0].Value, &stack) != nil || len(stack.Levels) < 2 {
				t.Fatalf("the crashed rank's stack: %+v", cr.Stack)
			}
			if f := stack.Levels[0]; f.Frame.Func != "fail" || len(f.Args) != 1 || f.Args[0].Name != "rank" || f.Args[0].Value != "1" {
				t.Errorf("frame 0: %+v, want fail (rank=1)", f)
			}
			if f := stack.Levels[1]; f.Frame.Func != "main" || !strings.Contains(fmt.Sprint(f.Locals), "size") {
				t.Errorf("frame 1: %+v, want main with its locals", f)
			}
			classes := classesOf(t, cr.Others)
			if _, ok := classes["0,2-3"]; !ok {
				t.Errorf("the other ranks' classes: %v, want one of [0,2-3]", classes)
			}
			if !strings.Contains(endsOf(r), c.ends) {
				t.Errorf("ends %q, want %q", endsOf(r), c.ends)
			}
			for _, want := range []string{"Crash: [1] SIGSEGV in fail at examples/crash/crash.c:12", "<svg", "#0 fail (rank=1)"} {
				if !strings.Contains(page, want) {
					t.Errorf("no %q in the page", want)
				}
			}
			for _, want := range []string{"[1] SIGSEGV in fail at examples/crash/crash.c:12, caught at the fault", "crash at ", "[1] #0 fail (rank=1) at examples/crash/crash.c:12", "report: " + filepath.Join(dir, "run.json")} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in the summary:\n%s", want, out)
				}
			}
		})
	}
}

// A hang under sdm report: no rank's stack changes for --hang-after, so
// the stacks, the MPI operations in flight and deadlock's diagnosis are
// taken, and --on-hang kill ends the job; under Open MPI and MPICH.
func TestReportHang(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	for _, c := range []struct{ rm, launcher, program string }{
		{"openmpi", "mpirun", "hang"},
		{"mpich", "mpiexec.mpich", "hang-mpich"},
	} {
		t.Run(c.rm, func(t *testing.T) {
			testenv.RequireTool(t, c.launcher)
			dir := t.TempDir()
			out, stderr, code := run(t, "", append(reportUnder(c.rm, 4, dir, "--hang-after", "2s", "--on-hang", "kill"), "--", filepath.Join(bin, c.program))...)
			if code == 0 {
				t.Fatalf("exit 0 for a job ended after its hang\n%s\n%s", out, stderr)
			}
			r, page := readReport(t, dir)
			if r.Outcome != "hung" || len(r.Hangs) != 1 {
				t.Fatalf("outcome %q, %d hangs; want hung, 1\n%s", r.Outcome, len(r.Hangs), out)
			}
			h := r.Hangs[0]
			classes := classesOf(t, h)
			if !strings.Contains(classes["3"], "compute at examples/hang/hang.c:12") {
				t.Errorf("classes %v, want [3] in compute", classes)
			}
			var queued []string
			for _, q := range h.Queues {
				queued = append(queued, fmt.Sprintf("[%s] %s", q.Ranks, q.Value))
			}
			if !strings.Contains(strings.Join(queued, "\n"), "[0-2] ") || !strings.Contains(strings.Join(queued, "\n"), "MPI_Recv from 3, tag 0") {
				t.Errorf("queues %v, want [0-2] in MPI_Recv from 3", queued)
			}
			var d struct{ Diagnoses []string }
			json.Unmarshal(h.Deadlock, &d)
			if want := "ranks 0-2 wait for rank 3, which is not in MPI: in compute at examples/hang/hang.c:12"; !strings.Contains(strings.Join(d.Diagnoses, "\n"), want) {
				t.Errorf("diagnoses %q, want %q", d.Diagnoses, want)
			}
			for _, want := range []string{"stack changed for", "ranks 0-2 wait for rank 3", "MPI_Recv from 3"} {
				if !strings.Contains(page, want) {
					t.Errorf("no %q in the page", want)
				}
			}
		})
	}
}

// Tracepoints log values without a stop a person sees: each rank's n-th
// pass is merged with the others' n-th, the expressions compared over
// them (the ranks over a limit named); a location in no code is said to be pending; the program runs to
// its end and sdm report exits 0 as it did.
func TestReportTracepoints(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	plain := filepath.Join(testenv.Examples(t), "plain")
	dir := t.TempDir()
	out, stderr, code := run(t, "", append(reportUnder("local", 4, dir, "--trace-at", "compute,rank,greeting", "--trace-at", "plain.c:30,i if i < 5", "--trace-at", "nosuch", "--trace-limit", "rank=1"), "--", plain, "1")...)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	r, page := readReport(t, dir)
	if len(r.Traces) != 3 {
		t.Fatalf("%d tracepoints, want 3", len(r.Traces))
	}
	compute := r.Traces[0]
	if len(compute.Hits) != 1 || compute.Hits[0].Ranks != "0-2" || len(compute.Hits[0].Values) != 2 ||
		compute.Hits[0].Values[0].Text != "rank min 0 [0] max 2 [2] mean 1; ranks 2 over 1" || !strings.Contains(compute.Hits[0].Values[1].Text, `greeting=0x`) {
		t.Errorf("compute's passes: %s", hitsText(compute))
	}
	// The loop's tracepoint: five passes (its condition) of every rank,
	// the n-th with i = n-1.
	loop := r.Traces[1]
	byPass := map[int]wire.RankSet{}
	for _, h := range loop.Hits {
		ranks, _ := wire.ParseRankSet(h.Ranks)
		byPass[h.Pass] = byPass[h.Pass].Union(ranks)
		if want := fmt.Sprintf("i=%d", h.Pass-1); len(h.Values) != 1 || h.Values[0].Text != want {
			t.Errorf("pass %d of [%s]: %+v, want %s", h.Pass, h.Ranks, h.Values, want)
		}
	}
	if len(byPass) != 5 || !byPass[1].Equal(wire.All(4)) || !byPass[5].Equal(wire.All(4)) {
		t.Errorf("the loop's passes: %s", hitsText(loop))
	}
	if !r.Traces[2].Pending || len(r.Traces[2].Hits) != 0 {
		t.Errorf("nosuch: %+v, want pending", r.Traces[2])
	}
	if endsOf(r) != "[0-3] exited with code 0" || r.Outcome != "ended" {
		t.Errorf("outcome %q, ends %q", r.Outcome, endsOf(r))
	}
	if len(r.Output) == 0 || !strings.Contains(strings.Join(r.Output[0].Lines, "\n"), "hello from rank 0 of 4") {
		t.Errorf("output tails %+v", r.Output)
	}
	for _, want := range []string{"Tracepoint <code>plain.c:30,i if i &lt; 5</code>", "rank min 0 [0] max 2 [2] mean 1", "i=4"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	if !strings.Contains(out, "tracepoint nosuch: pending") || !strings.Contains(out, "[0-3] hello from rank") && !strings.Contains(out, "hello from rank 3 of 4") {
		t.Errorf("the summary:\n%s", out)
	}
}

func hitsText(tr *report.Trace) string {
	var b strings.Builder
	for _, h := range tr.Hits {
		fmt.Fprintf(&b, "[%s] pass %d: %+v\n", h.Ranks, h.Pass, h.Values)
	}
	return b.String()
}

// SIGUSR1 takes a snapshot and the job runs on; SIGTERM takes a last one,
// ends the job and writes the report: what a batch system's signals
// before the allocation ends give.
func TestReportSnapshotsOnSignals(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	plain := filepath.Join(testenv.Examples(t), "plain")
	dir := t.TempDir()
	p := start(t, testenv.Command(t, sdmBin, append(reportUnder("local", 4, dir), "--", plain, "60")...))
	p.lines(t, 4, "hello from rank")
	p.cmd.Process.Signal(syscall.SIGUSR1)
	p.lines(t, 1, "snapshot (SIGUSR1): stacks of [0-3] taken")
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.lines(t, 1, "report: "+filepath.Join(dir, "run.json"))
	<-p.done
	r, page := readReport(t, dir)
	if len(r.Shots) != 2 || r.Shots[0].Why != "snapshot (SIGUSR1)" || !strings.Contains(r.Shots[1].Why, "SIGTERM") {
		t.Fatalf("snapshots %+v, want SIGUSR1's and SIGTERM's", r.Shots)
	}
	for _, s := range r.Shots {
		if _, ok := classesOf(t, s)["0-3"]; !ok || !strings.Contains(string(s.Stacks), `"rest"`) {
			t.Errorf("%s: stacks %s, want [0-3] in rest", s.Why, s.Stacks)
		}
	}
	if !strings.Contains(r.Outcome, "SIGTERM") || endsOf(r) != "[0-3] killed" {
		t.Errorf("outcome %q, ends %q", r.Outcome, endsOf(r))
	}
	if !strings.Contains(page, "snapshot (SIGUSR1), at ") {
		t.Errorf("no SIGUSR1 snapshot in the page")
	}
}

// What a person reads: the pages of a crash and of a hang in a real
// browser (chromium, headless) show the tree, the rank sets and the
// classes, and load nothing.
func TestReportInBrowser(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun")
	browser := testenv.RequireTool(t, "chromium", "chromium-browser")
	bin := testenv.Examples(t)
	for _, c := range []struct {
		program string
		args    []string
		want    []string
	}{
		{"crash", nil, []string{"Crash: [1] SIGSEGV in fail", "[0,2-3]", "<svg", "fail at examples/crash/crash.c:12  [1] (1)"}},
		{"hang", []string{"--hang-after", "2s", "--on-hang", "kill"}, []string{"hang: no rank", "[0-2] (3)", "<svg", "compute at examples/hang/hang.c:12  [3] (1)"}},
	} {
		t.Run(c.program, func(t *testing.T) {
			dir := t.TempDir()
			run(t, "", append(reportUnder("openmpi", 4, dir, c.args...), "--", filepath.Join(bin, c.program))...)
			page := filepath.Join(dir, "run.html")
			flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + filepath.Join(dir, "profile"),
				// Any request beyond the page fails, and the log says so.
				"--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"}
			dom, err := testenv.Command(t, browser, append(flags, "--dump-dom", "file://"+page)...).Output()
			if err != nil {
				t.Fatalf("chromium --dump-dom: %v", err)
			}
			for _, want := range c.want {
				if !strings.Contains(string(dom), want) {
					t.Errorf("no %q in the page as chromium read it", want)
				}
			}
			if strings.Contains(string(dom), "<script") {
				t.Errorf("a script in the page")
			}
			shot := filepath.Join(dir, "page.png")
			log, err := testenv.Command(t, browser, append(flags, "--screenshot="+shot, "--window-size=1280,1600", "file://"+page)...).CombinedOutput()
			if err != nil {
				t.Fatalf("chromium --screenshot: %v\n%s", err, log)
			}
			if st, err := os.Stat(shot); err != nil {
				t.Errorf("no screenshot: %v", err)
			} else if st.Size() < 10000 {
				t.Errorf("the screenshot holds %d bytes: an empty page", st.Size())
			}
			if strings.Contains(string(log), "ERR_NAME_NOT_RESOLVED") {
				t.Errorf("the page asked for something beyond itself:\n%s", log)
			}
		})
	}
}

// sdm report in a batch job across two of the cluster's hosts, as a user
// runs it at night: the script execs sdm report (so that SLURM's
// --signal=B:USR1 reaches it), the hang is taken with its diagnosis,
// SIGUSR1 takes a snapshot, and SIGTERM (the allocation's end) a last one
// before the job ends and the report is written.
func TestReportUnderSbatchAcrossHosts(t *testing.T) {
	c := testenv.StartCluster(t)
	hang := filepath.Join(testenv.Examples(t), "hang")
	dir := t.TempDir()
	env := append(os.Environ(), "SLURM_CONF="+c.SLURMConf)
	script := filepath.Join(dir, "job.sh")
	text := fmt.Sprintf("#!/bin/sh\n#SBATCH --signal=B:USR1@120\nexec %s report -n 4 --hang-after 3s --out %s --json %s -- %s\n",
		sdmBin, filepath.Join(dir, "run.html"), filepath.Join(dir, "run.json"), hang)
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "job.out")
	slurm := func(name string, args ...string) string {
		t.Helper()
		cmd := testenv.Command(t, name, args...)
		cmd.Env, cmd.Dir = env, dir
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, got)
		}
		return strings.TrimSpace(string(got))
	}
	job, _, _ := strings.Cut(slurm("sbatch", "--parsable", "-N2", "-n4", "-o", out, script), ";")
	t.Cleanup(func() {
		cancel := testenv.Command(t, "scancel", job)
		cancel.Env = env
		cancel.Run()
	})
	waitLogged(t, out, "stack changed for")
	slurm("scancel", "--batch", "--signal=USR1", job)
	waitLogged(t, out, "snapshot (SIGUSR1): stacks of [0-3] taken")
	slurm("scancel", "--batch", "--signal=TERM", job)
	waitLogged(t, out, "report: "+filepath.Join(dir, "run.json"))
	r, page := readReport(t, dir)
	if r.Outcome != "hung" || len(r.Hangs) != 1 {
		t.Fatalf("outcome %q, %d hangs; want hung, 1", r.Outcome, len(r.Hangs))
	}
	var d struct{ Diagnoses []string }
	json.Unmarshal(r.Hangs[0].Deadlock, &d)
	if !strings.Contains(strings.Join(d.Diagnoses, "\n"), "ranks 0-2 wait for rank 3") {
		t.Errorf("diagnoses %q", d.Diagnoses)
	}
	if len(r.Shots) != 2 || r.Shots[0].Why != "snapshot (SIGUSR1)" || !strings.Contains(r.Shots[1].Why, "SIGTERM") {
		t.Errorf("snapshots %+v, want SIGUSR1's and SIGTERM's", r.Shots)
	}
	for _, s := range r.Shots {
		if !strings.Contains(classesOf(t, s)["3"], "compute at examples/hang/hang.c:12") {
			t.Errorf("%s: classes %v", s.Why, classesOf(t, s))
		}
	}
	if endsOf(r) != "[0-3] killed" {
		t.Errorf("ends %q", endsOf(r))
	}
	if !strings.Contains(page, "ranks 0-2 wait for rank 3") {
		t.Errorf("no diagnosis in the page")
	}
	noStraysOn(t, c)
}

// --end-after ends a job that runs on with a last snapshot, as the end of
// an allocation that no signal announces.
func TestReportEndAfter(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	plain := filepath.Join(testenv.Examples(t), "plain")
	dir := t.TempDir()
	out, stderr, code := run(t, "", append(reportUnder("local", 2, dir, "--end-after", "2s"), "--", plain, "60")...)
	if code != 128+9 {
		t.Fatalf("exit %d, want 137 (ranks ended by sdm)\n%s\n%s", code, out, stderr)
	}
	r, _ := readReport(t, dir)
	if r.Outcome != "ended by --end-after 2s" || len(r.Shots) != 1 || r.Seconds < 2 || endsOf(r) != "[0-1] killed" {
		t.Errorf("outcome %q after %.1f s, %d snapshots, ends %q", r.Outcome, r.Seconds, len(r.Shots), endsOf(r))
	}
}

// sdm report --pid watches a job that runs already, as STAT's batch mode
// does: a snapshot at once, the hang with its diagnosis, and at the end
// the job left running as it was found, untraced.
func TestReportAttached(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	const n = 4
	pid := hungMpirun(t, n)
	dir := t.TempDir()
	out, stderr, code := run(t, "", "report", "--pid", strconv.Itoa(pid), "--hang-after", "2s", "--end-after", "5s",
		"--out", filepath.Join(dir, "run.html"), "--json", filepath.Join(dir, "run.json"))
	r, _ := readReport(t, dir)
	if len(r.Shots) != 2 || r.Shots[0].Why != "snapshot (at attach)" || len(r.Hangs) != 1 || r.Outcome != "hung" {
		t.Fatalf("exit %d; snapshots %d, hangs %d, outcome %q\n%s\n%s", code, len(r.Shots), len(r.Hangs), r.Outcome, out, stderr)
	}
	if !strings.Contains(classesOf(t, r.Shots[0])["3"], "compute at examples/hang/hang.c:12") {
		t.Errorf("the snapshot at attach: %v", classesOf(t, r.Shots[0]))
	}
	if endsOf(r) != "[0-3] left running as found (detached)" {
		t.Errorf("ends %q", endsOf(r))
	}
	for _, rank := range rankPids(t, pid, n) {
		if stopped, tracer := mpir.Traced(rank); stopped || tracer != 0 {
			t.Errorf("rank process %d after sdm report: stopped %v, traced by %d", rank, stopped, tracer)
		}
	}
}

// A job that does not come up still leaves its report, saying why: a
// batch script's report is there whatever happened.
func TestReportOfAJobThatDidNotStart(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := run(t, "", append(reportUnder("local", 2, dir), "--", filepath.Join(dir, "no-such-program"))...)
	if code == 0 {
		t.Fatalf("exit 0 for a program that is not there\n%s\n%s", out, stderr)
	}
	r, page := readReport(t, dir)
	if !strings.HasPrefix(r.Outcome, "not started: ") || !strings.Contains(r.Error, "no-such-program") || !strings.Contains(page, "Why the job did not start") {
		t.Errorf("outcome %q, error %q", r.Outcome, r.Error)
	}
}
