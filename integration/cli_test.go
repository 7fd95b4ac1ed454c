package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// run runs the sdm binary and returns its standard output, standard error
// and exit code.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runWith(t, nil, stdin, args...)
}

// runWith is run in the environment env (this process's when nil).
func runWith(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := testenv.Command(t, sdmBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestRoutesTreeCommand(t *testing.T) {
	out, _, code := run(t, "", "routes", "tree", "-n", "8")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, line := range []string{"8 - 0,1,3,7", "0 8 2,4", "1 8 5", "2 0 6", "7 8 -"} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("routes tree -n 8 lacks %q:\n%s", line, out)
		}
	}
	out, _, _ = run(t, "", "routes", "tree", "-n", "6", "--fanout", "2")
	if !strings.HasPrefix(out, "6 - 0,3\n") {
		t.Errorf("k-ary tree of 6:\n%s", out)
	}
	if _, stderr, code := run(t, "", "routes", "tree", "-n", "0"); code == 0 || !strings.Contains(stderr, "tree of 0 servers") {
		t.Errorf("-n 0: exit %d, %q", code, stderr)
	}
	// A routing file's servers, two on each of four hosts: a tree of
	// hosts, or of servers with --tree ranks.
	routes := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(routes, []byte("8\n0 a 1\n1 a 2\n2 b 3\n3 b 4\n4 c 5\n5 c 6\n6 d 7\n7 d 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, _ = run(t, "", "routes", "tree", routes)
	if want := "8 - 0,2,6\n0 8 1,4\n1 0 -\n2 8 3\n3 2 -\n4 0 5\n5 4 -\n6 8 7\n7 6 -\n"; out != want {
		t.Errorf("routes tree of a file of 4 hosts:\n%s\nwant\n%s", out, want)
	}
	if out, _, _ = run(t, "", "routes", "tree", "--tree", "ranks", routes); !strings.HasPrefix(out, "8 - 0,1,3,7\n") {
		t.Errorf("routes tree --tree ranks:\n%s", out)
	}
	if _, stderr, code := run(t, "", "routes", "tree", "-n", "3", routes); code != 2 || !strings.Contains(stderr, "usage") {
		t.Errorf("-n with a file: exit %d, %q", code, stderr)
	}
}

func TestRoutesCheckCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("2\r\n0 h1 50001\r\n1 h2 50002\r\n"), 0o644)
	if out, _, code := run(t, "", "routes", "check", good); code != 0 || out != "ok 2 entries\n" {
		t.Errorf("good file: exit %d, %q", code, out)
	}
	for name, text := range map[string]string{
		"short":   "3\n0 h 1\n1 h 2\n",
		"port":    "2\n0 h 1\n1 h 70000\n",
		"garbage": "1\n0 h 1 extra\n",
		"dup":     "2\n0 h 1\n0 h 2\n",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(text), 0o644)
		_, stderr, code := run(t, "", "routes", "check", path)
		if code == 0 || !strings.Contains(stderr, path+":") {
			t.Errorf("%s: exit %d, stderr %q; want a failure naming %s:LINE", name, code, stderr, path)
		}
	}
}

func TestDebugBatchText(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cmds")
	os.WriteFile(script, []byte("# a comment\nstatus\n[0-3] where\nstacks\nquit\nwhere\n"), 0o644)
	out, stderr, code := run(t, "", "debug", "-n", "8", "--backend", "sim", "--batch", script, "--", "hang")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := []string{
		"[0-6] stopped in MPI_Recv at recv.c:64 (started)\n",
		"[7] stopped in compute at hang.c:15 (started)\n",
		"[0-3] #0  MPI_Recv () at recv.c:64\n      #1  main () at hang.c:35\n",
		"[0-6] main at hang.c:35 (7 ranks)\n  [0-6] MPI_Recv at recv.c:64 (7 ranks)\n",
		"[7] main at hang.c:31 (1 rank)\n  [7] compute at hang.c:15 (1 rank)\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// Nothing after quit runs: the last where would print a second line
	// for ranks 0-6.
	if strings.Count(out, "#1  main () at hang.c:35") != 1 {
		t.Errorf("commands after quit ran:\n%s", out)
	}
}

// Under --json every command has one reply on the standard output, a
// mistake too, each with the schema's version; events are lines of their
// own.
func TestDebugJSON(t *testing.T) {
	out, stderr, code := run(t, "", "debug", "-n", "4", "--debugger", "sim", "--json", "-e", "where", "-e", "[9] where", "--", "ring")
	if code != 2 || strings.Contains(stderr, "not in this job") {
		t.Fatalf("a rank outside the job: exit %d, %q; want exit 2 and the reply on stdout", code, stderr)
	}
	var replies []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", line, err)
		}
		if obj["version"] != 1.0 {
			t.Errorf("no version: %q", line)
		}
		if obj["type"] == "reply" {
			replies = append(replies, obj)
		}
	}
	if len(replies) != 2 {
		t.Fatalf("want two replies:\n%s", out)
	}
	groups, _ := replies[0]["groups"].([]any)
	if len(groups) != 2 || groups[0].(map[string]any)["ranks"] != "0" || groups[1].(map[string]any)["ranks"] != "1-3" ||
		groups[1].(map[string]any)["op"] != "backtrace" || replies[0]["ok"] != true || replies[0]["seq"] != 1.0 {
		t.Errorf("where as JSON: %v", replies[0])
	}
	if e, _ := replies[1]["error"].(string); replies[1]["ok"] != false || replies[1]["seq"] != 2.0 || !strings.Contains(e, "ranks 9 are not in this job") {
		t.Errorf("[9] where as JSON: %v", replies[1])
	}
}

func TestDebugRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"debug", "-n", "2", "--backend", "sim"}, "no program given"},
		{[]string{"debug", "-n", "0", "--backend", "sim", "--", "ring"}, "need at least one rank"},
		{[]string{"debug", "-n", "2", "--backend", "lldb", "--", "ring"}, "--debugger lldb: want gdb or sim"},
		{[]string{"debug", "-n", "2", "--debugger", "lldb", "--", "ring"}, "--debugger lldb: want gdb or sim"},
		{[]string{"debug", "-n", "2", "--backend", "sim", "--", "nosuch"}, "no simulated program"},
		{[]string{"debug", "-n", "2", "--backend", "sim", "-e", "frobnicate", "--", "ring"}, `unknown command "frobnicate"`},
		{[]string{"debug", "-n", "2", "--backend", "sim", "-e", "[0-", "--", "ring"}, "no closing ]"},
	} {
		_, stderr, code := run(t, "", tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestServerRefusesBadSetup(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "key")
	os.WriteFile(loose, []byte(strings.Repeat("ab", 32)+"\n"), 0o644)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--server=0"}, "no session key"},
		{nil, []string{"--server=0", "--key-file=" + loose}, "insecure permissions"},
		{[]string{"SDM_SESSION_KEY=abc"}, []string{"--server=0"}, "64 hex digits"},
		{[]string{"SDM_SESSION_KEY=" + strings.Repeat("ab", 32)}, nil, "no rank index"},
		{[]string{"SDM_SESSION_KEY=" + strings.Repeat("ab", 32), "PMI_RANK=x"}, nil, "PMI_RANK"},
		{[]string{"SDM_SESSION_KEY=" + strings.Repeat("ab", 32)}, []string{"--server=0", "--debugger=lldb"}, "--debugger=lldb"},
		{[]string{"SDM_SESSION_KEY=" + strings.Repeat("ab", 32)}, []string{"--server=0", "surplus"}, "unexpected argument"},
	} {
		cmd := testenv.Command(t, sdmBin, tc.args...)
		cmd.Env = append(cleanEnv(), tc.env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v %v: %v, %q; want %q", tc.env, tc.args, err, out, tc.want)
		}
	}
}

// cleanEnv is the environment without any rank variable or key.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MP_CHILD", "SDM_SESSION_KEY":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// stacks draws the tree with Graphviz: DOT source and an SVG picture.
func TestStacksDrawings(t *testing.T) {
	testenv.RequireTool(t, "dot")
	dir := t.TempDir()
	dot, svg := filepath.Join(dir, "t.dot"), filepath.Join(dir, "t.svg")
	_, stderr, code := run(t, "", "debug", "-n", "8", "--backend", "sim", "-e", "stacks --dot "+dot+" --svg "+svg, "--", "hang")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	src, err := os.ReadFile(dot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"digraph stacks", `"MPI_Recv\nrecv.c:64\n[0-6] 7"`, `"compute\nhang.c:15\n[7] 1"`, "->"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("DOT lacks %q:\n%s", want, src)
		}
	}
	pic, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(pic), "<svg") || !strings.Contains(string(pic), "MPI_Recv") {
		t.Fatalf("SVG: %v %.200s", err, pic)
	}
	// Each box's lines are lines of their own, not one line with a
	// backslash in it.
	for _, want := range []string{">MPI_Recv</text>", ">recv.c:64</text>", ">[0&#45;6] 7</text>"} {
		if !strings.Contains(string(pic), want) {
			t.Errorf("SVG lacks the line %q:\n%s", want, pic)
		}
	}
	if strings.Contains(string(pic), `\n`) {
		t.Errorf("SVG shows a literal \\n:\n%s", pic)
	}
	if _, stderr, code := run(t, "", "debug", "-n", "2", "--backend", "sim", "-e", "stacks --dot", "--", "hang"); code == 0 || !strings.Contains(stderr, "--dot needs a value: stacks [--samples K]") {
		t.Fatalf("stacks --dot without a file: exit %d, %q", code, stderr)
	}
}

// Every command counts toward the exit status, those before a quit too:
// a command typed wrong gives 2 whether the script ends with quit or not,
// from -e, --batch and piped input alike.
func TestQuitKeepsTheErrors(t *testing.T) {
	script := filepath.Join(t.TempDir(), "cmds")
	if err := os.WriteFile(script, []byte("bogus\nstatus\nquit\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"-e", "bogus", "-e", "status", "-e", "quit"}},
		{"", []string{"-e", "bogus", "-e", "status"}},
		{"", []string{"--batch", script}},
		{"bogus\nstatus\nquit\n", nil},
	} {
		args := append(append([]string{"debug", "-n", "2", "--debugger", "sim"}, c.args...), "--", "ring")
		_, stderr, code := run(t, c.stdin, args...)
		if code != 2 || !strings.Contains(stderr, `unknown command "bogus"`) {
			t.Errorf("%v (stdin %q): exit %d, want 2 for the command typed wrong\n%s", c.args, c.stdin, code, stderr)
		}
	}
	if _, stderr, code := run(t, "", "debug", "-n", "2", "--debugger", "sim", "-e", "status", "-e", "quit", "--", "ring"); code != 0 {
		t.Errorf("a script without mistakes that ends with quit: exit %d\n%s", code, stderr)
	}
}
