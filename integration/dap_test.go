package integration

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/dap"
	"github.com/sdm-hpc/sdm/mpir"
	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// dapCodec reads sdm's own responses besides DAP's.
var dapCodec = func() *godap.Codec {
	c := godap.NewCodec()
	c.RegisterRequest("sdm/stacks", func() godap.Message { return &dap.StacksRequest{} }, func() godap.Message { return &dap.StacksResponse{} })
	c.RegisterRequest("sdm/deadlock", func() godap.Message { return &dap.DeadlockRequest{} }, func() godap.Message { return &dap.DeadlockResponse{} })
	c.RegisterRequest("sdm/compare", func() godap.Message { return &dap.CompareRequest{} }, func() godap.Message { return &dap.CompareResponse{} })
	return c
}()

// dapClient drives `sdm dap` over its standard input and output.
type dapClient struct {
	t    testing.TB
	cmd  *exec.Cmd
	in   io.WriteCloser
	msgs chan godap.Message
	seen []godap.Message // events read while waiting for something else
	seq  int
	sent int // messages the adapter sent
}

func startDAP(t testing.TB) *dapClient {
	t.Helper()
	cmd := testenv.Command(t, sdmBin, "dap")
	in, out, stderr := piped(t, cmd)
	c := &dapClient{t: t, cmd: cmd, in: in, msgs: make(chan godap.Message, 1000)}
	go func() {
		defer close(c.msgs)
		r := bufio.NewReader(out)
		for {
			body, err := godap.ReadBaseMessage(r)
			if err != nil {
				return
			}
			m, err := dapCodec.DecodeMessage(body)
			if err != nil {
				t.Errorf("the adapter sent %s: %v", body, err)
				continue
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Errorf("sdm dap did not end a minute after its client went")
		}
		if t.Failed() {
			t.Logf("sdm dap's standard error:\n%s", stderr.String())
		}
	})
	return c
}

// launchDAP starts sdm dap and has it launch or attach (request) with
// args, up to its initialized event.
func launchDAP(t testing.TB, request string, args map[string]any) *dapClient {
	t.Helper()
	c := startDAP(t)
	c.call("initialize", map[string]any{"adapterID": "sdm", "linesStartAt1": true})
	c.call(request, args)
	c.event("initialized")
	return c
}

// request sends a request and returns its seq.
func (c *dapClient) request(command string, args any) int {
	c.t.Helper()
	c.seq++
	m := map[string]any{"seq": c.seq, "type": "request", "command": command}
	if args != nil {
		m["arguments"] = args
	}
	body, _ := json.Marshal(m)
	if err := godap.WriteBaseMessage(c.in, body); err != nil {
		c.t.Fatal(err)
	}
	return c.seq
}

// next returns the next message the adapter sends.
func (c *dapClient) next(what string, timeout time.Duration) godap.Message {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatalf("sdm dap ended while waiting for %s", what)
		}
		c.sent++
		return m
	case <-time.After(timeout):
		c.t.Fatalf("no %s within %v", what, timeout)
	}
	return nil
}

// call sends a request and returns its successful response, keeping the
// events that came before it.
func (c *dapClient) call(command string, args any) godap.ResponseMessage {
	c.t.Helper()
	seq := c.request(command, args)
	for {
		m := c.next("the response to "+command, 3*time.Minute)
		if r, ok := m.(godap.ResponseMessage); ok && r.GetResponse().RequestSeq == seq {
			if !r.GetResponse().Success {
				c.t.Fatalf("%s: %s", command, r.GetResponse().Message)
			}
			return r
		}
		c.seen = append(c.seen, m)
	}
}

// event waits for an event named name, from those kept first.
func (c *dapClient) event(name string) godap.EventMessage {
	c.t.Helper()
	for i, m := range c.seen {
		if e, ok := m.(godap.EventMessage); ok && e.GetEvent().Event == name {
			c.seen = append(c.seen[:i:i], c.seen[i+1:]...)
			return e
		}
	}
	for {
		m := c.next("a "+name+" event", 2*time.Minute)
		if e, ok := m.(godap.EventMessage); ok && e.GetEvent().Event == name {
			return e
		}
		c.seen = append(c.seen, m)
	}
}

// output is the text of every output event seen so far.
func (c *dapClient) output() string {
	var b strings.Builder
	for _, m := range c.seen {
		if o, ok := m.(*godap.OutputEvent); ok {
			b.WriteString(o.Body.Output)
		}
	}
	return b.String()
}

// stopped waits for stopped events until every rank has stopped, and
// checks their reason; it returns the last.
func (c *dapClient) stopped(reason string) *godap.StoppedEvent {
	c.t.Helper()
	for {
		e := c.event("stopped").(*godap.StoppedEvent)
		if e.Body.Reason != reason {
			c.t.Fatalf("stopped: %+v, want reason %s", e.Body, reason)
		}
		if e.Body.AllThreadsStopped {
			return e
		}
	}
}

// An editor's whole session over 4 Open MPI ranks of ring: breakpoints,
// threads, stack, variables, expressions, the sdm console, stepping and
// the end, with nothing left behind.
func TestDAPSessionOpenMPI(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	mark := marked(t)
	root, _ := filepath.Abs("..") // where make built the examples from
	ring, source := filepath.Join(bin, "ring"), filepath.Join(root, "examples", "ring", "ring.c")
	c := launchDAP(t, "launch", map[string]any{"program": ring, "args": []string{"2"}, "ranks": 4, "rm": "openmpi",
		"launcherArgs": []string{"--allow-run-as-root", "--oversubscribe"}, "cwd": root, "env": map[string]string{"SDM_DAP_ENV": "42"}})
	bps := c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source}, "breakpoints": []any{map[string]any{"line": 8}}}).(*godap.SetBreakpointsResponse)
	if b := bps.Body.Breakpoints; len(b) != 1 || !b[0].Verified || b[0].Line != 8 {
		t.Fatalf("setBreakpoints: %+v", b)
	}
	c.call("configurationDone", nil)
	stop := c.stopped("breakpoint")
	if stop.Body.HitBreakpointIds == nil || stop.Body.HitBreakpointIds[0] != bps.Body.Breakpoints[0].Id {
		t.Errorf("stopped at breakpoint %v, want %d", stop.Body.HitBreakpointIds, bps.Body.Breakpoints[0].Id)
	}
	threads := c.call("threads", nil).(*godap.ThreadsResponse).Body.Threads
	if len(threads) != 4 || threads[2].Name != "rank 2" {
		t.Fatalf("threads: %+v", threads)
	}
	frames := c.call("stackTrace", map[string]any{"threadId": threads[2].Id}).(*godap.StackTraceResponse).Body.StackFrames
	if len(frames) < 2 || frames[0].Name != "pass" || frames[0].Line != 8 || frames[0].Source == nil || frames[0].Source.Path != source || frames[1].Name != "main" {
		t.Fatalf("rank 2's stack: %+v", frames)
	}
	scopes := c.call("scopes", map[string]any{"frameId": frames[0].Id}).(*godap.ScopesResponse).Body.Scopes
	args := c.call("variables", map[string]any{"variablesReference": scopes[1].VariablesReference}).(*godap.VariablesResponse).Body.Variables
	if !hasVariable(args, "rank", "2") || !hasVariable(args, "size", "4") {
		t.Errorf("rank 2's arguments: %+v", args)
	}
	if r := c.call("evaluate", map[string]any{"expression": "rank * 10 + size", "frameId": frames[0].Id, "context": "watch"}).(*godap.EvaluateResponse); r.Body.Result != "24" {
		t.Errorf("watch rank * 10 + size on rank 2: %q", r.Body.Result)
	}
	if !testenv.InferiorCalls(t) {
		// The launch's environment, read without a call.
		if r := c.call("evaluate", map[string]any{"expression": "[2] gdb show environment SDM_DAP_ENV", "context": "repl"}).(*godap.EvaluateResponse); !strings.Contains(r.Body.Result, "SDM_DAP_ENV = 42") {
			t.Errorf("the launch's env in rank 2: %q", r.Body.Result)
		}
	} else if r := c.call("evaluate", map[string]any{"expression": `(char *)getenv("SDM_DAP_ENV")`, "frameId": frames[0].Id, "context": "watch"}).(*godap.EvaluateResponse); !strings.HasSuffix(r.Body.Result, `"42"`) {
		t.Errorf("the launch's env in rank 2: %q", r.Body.Result)
	}
	repl := c.call("evaluate", map[string]any{"expression": "[1-3] print rank > 0", "context": "repl"}).(*godap.EvaluateResponse).Body.Result
	if !strings.Contains(repl, "[1-3]") || !strings.Contains(repl, "1") {
		t.Errorf("the console's print, merged: %q", repl)
	}
	tree := c.call("sdm/stacks", nil).(*dap.StacksResponse).Body
	if len(tree.Roots) != 1 || tree.Roots[0].Ranks != "0-3" || !strings.Contains(fmt.Sprint(tree), "pass") {
		t.Errorf("sdm/stacks: %+v", tree)
	}
	// Stopped in pass, no rank waits in MPI.
	if d := c.call("sdm/deadlock", nil).(*dap.DeadlockResponse).Body; d.Diagnosis["diagnosis"] != "diagnosis: no rank waits in a blocking MPI call: not an MPI deadlock" || len(d.Errors) != 0 {
		t.Errorf("sdm/deadlock: %+v", d)
	}
	cmp := c.call("sdm/compare", map[string]any{"expression": "rank", "ranks": "1-3"}).(*dap.CompareResponse).Body
	if cmp.Ranks != "1-3" || len(cmp.Text) == 0 || !strings.HasPrefix(cmp.Text[0], "rank: 3 values, min 1 (rank 1), max 3 (rank 3), mean 2") {
		t.Errorf("sdm/compare: %+v", cmp)
	}
	c.call("next", map[string]any{"threadId": threads[0].Id})
	c.stopped("step")
	c.call("stepOut", map[string]any{"threadId": threads[0].Id})
	c.stopped("step")
	if top := c.call("stackTrace", map[string]any{"threadId": threads[1].Id}).(*godap.StackTraceResponse).Body.StackFrames[0]; top.Name != "main" || top.Line != 29 {
		t.Errorf("after stepOut, rank 1 is at %s:%d, want main:29", top.Name, top.Line)
	}
	c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source}, "breakpoints": []any{}})
	c.call("continue", map[string]any{"threadId": threads[0].Id})
	if code := c.event("exited").(*godap.ExitedEvent).Body.ExitCode; code != 0 {
		t.Errorf("exit code %d", code)
	}
	c.event("terminated")
	if out := c.output(); !regexp.MustCompile(`(?m)^\[[0-3,-]+\] ring of 4 ranks done$`).MatchString(out) || !strings.Contains(out, "\n[0] token after 2 rounds: 12\n") {
		t.Errorf("the ranks' output, with their ranks: %q", out)
	}
	c.call("disconnect", nil)
	noStraysMarked(t, mark)
}

func hasVariable(vars []godap.Variable, name, value string) bool {
	for _, v := range vars {
		if v.Name == name && v.Value == value {
			return true
		}
	}
	return false
}

// An editor attaches to a hung mpirun: the ranks run on until pause, the
// stack shows the stuck rank, and disconnecting lets the job run on,
// neither stopped nor traced.
func TestDAPAttachPause(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	const n = 4
	pid := hungMpirun(t, n)
	c := launchDAP(t, "attach", map[string]any{"pid": pid})
	threads := pausedAtCompute(t, c, n)
	if msg := c.failure("stackTrace", map[string]any{"threadId": 99}); !strings.Contains(msg, "no thread 99") {
		t.Errorf("a thread that is not there: %q", msg)
	}
	c.call("continue", map[string]any{"threadId": threads[0].Id})
	c.call("disconnect", nil)
	ranks := rankPids(t, pid, n)
	waitFree(t, append([]int{pid}, ranks...))
}

// A client that dies mid-session takes its job with it: no rank, gdb or
// server is left.
func TestDAPClientDies(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	mark := marked(t)
	c := launchDAP(t, "launch", map[string]any{"program": filepath.Join(bin, "ring"), "ranks": 2, "rm": "openmpi",
		"launcherArgs": []string{"--allow-run-as-root", "--oversubscribe"}, "stopOnEntry": true})
	c.call("configurationDone", nil)
	c.stopped("entry")
	c.in.Close() // the editor is gone: its end of the pipe closes
	noStraysMarked(t, mark)
}

// A multi-threaded rank shows each of its threads ("rank 1 · thread 2"),
// each with its own stack; a single-threaded view stays one per rank.
func TestDAPThreadsOfEachRank(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	bin := testenv.Examples(t)
	c := launchDAP(t, "launch", map[string]any{"program": filepath.Join(bin, "threads"), "ranks": 2, "rm": "local", "allThreads": true})
	c.call("setFunctionBreakpoints", map[string]any{"breakpoints": []any{map[string]any{"name": "ready"}}})
	c.call("configurationDone", nil)
	stop := c.stopped("breakpoint")
	threads := c.call("threads", nil).(*godap.ThreadsResponse).Body.Threads
	var names []string
	workers := 0
	for _, th := range threads {
		names = append(names, th.Name)
		frames := c.call("stackTrace", map[string]any{"threadId": th.Id}).(*godap.StackTraceResponse).Body.StackFrames
		switch {
		case th.Id == stop.Body.ThreadId && frames[0].Name != "ready":
			t.Errorf("the stopped thread %q is in %q, want ready", th.Name, frames[0].Name)
		case th.Id != 1 && th.Id != 2 && !strings.Contains(fmt.Sprint(frames), "worker"):
			t.Errorf("thread %q (%d) is not in worker: %+v", th.Name, th.Id, frames)
		case th.Id != 1 && th.Id != 2:
			workers++
		}
	}
	if len(threads) != 6 || workers != 4 || names[0] != "rank 0 · thread 1" || names[5] != "rank 1 · thread 3" {
		t.Errorf("threads %q (%d workers), want 3 for each of 2 ranks", names, workers)
	}
	// The rank's thread shown as rank + 1 stays the stopped one, however
	// many other threads were looked at.
	if frames := c.call("stackTrace", map[string]any{"threadId": 1}).(*godap.StackTraceResponse).Body.StackFrames; frames[0].Name != "ready" {
		t.Errorf("rank 0's stopped thread after the others were read: %+v", frames[0])
	}
	c.call("setFunctionBreakpoints", map[string]any{"breakpoints": []any{}})
	c.call("continue", map[string]any{"threadId": 1})
	c.event("terminated")
	c.call("disconnect", nil)
}

// A launch through MPIR: mpirun starts the ranks, sdm acquires them, and
// the session goes on as any other.
func TestDAPLaunchMPIR(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	root, _ := filepath.Abs("..")
	source := filepath.Join(root, "examples", "ring", "ring.c")
	mark := marked(t)
	c := launchDAP(t, "launch", map[string]any{"program": filepath.Join(bin, "ring"), "ranks": 2, "rm": "openmpi", "mpir": true,
		"launcherArgs": []string{"--allow-run-as-root", "--oversubscribe"}, "cwd": root})
	c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source}, "breakpoints": []any{map[string]any{"line": 8}}})
	c.call("configurationDone", nil)
	c.stopped("breakpoint")
	if threads := c.call("threads", nil).(*godap.ThreadsResponse).Body.Threads; len(threads) != 2 {
		t.Errorf("threads of 2 ranks acquired through MPIR: %+v", threads)
	}
	c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source}, "breakpoints": []any{}})
	c.call("continue", map[string]any{"threadId": 1})
	c.event("terminated")
	c.call("disconnect", nil)
	noStraysMarked(t, mark)
}

// terminate ends a launched job: terminated, and nothing left behind.
func TestDAPTerminate(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	mark := marked(t)
	c := launchDAP(t, "launch", map[string]any{"program": filepath.Join(bin, "ring"), "ranks": 2, "rm": "openmpi",
		"launcherArgs": []string{"--allow-run-as-root", "--oversubscribe"}, "stopOnEntry": true})
	c.call("configurationDone", nil)
	c.stopped("entry")
	c.call("terminate", nil)
	c.event("terminated")
	c.call("disconnect", nil)
	noStraysMarked(t, mark)
}

// failure sends a request and returns its error message.
func (c *dapClient) failure(command string, args any) string {
	c.t.Helper()
	seq := c.request(command, args)
	for {
		m := c.next("the response to "+command, time.Minute)
		if r, ok := m.(godap.ResponseMessage); ok && r.GetResponse().RequestSeq == seq {
			if r.GetResponse().Success {
				c.t.Fatalf("%s succeeded; want an error", command)
			}
			return r.GetResponse().Message
		}
		c.seen = append(c.seen, m)
	}
}

// waitFree waits until every process runs, neither stopped nor traced
// (a detach takes effect when each server has let its rank go).
// pausedAtCompute ends the configuration of a session attached to n
// ranks of hang, checks that the ranks are its threads, pauses them, and
// checks that the last rank is computing; it returns the threads.
func pausedAtCompute(t *testing.T, c *dapClient, n int) []godap.Thread {
	t.Helper()
	c.call("configurationDone", nil)
	threads := c.call("threads", nil).(*godap.ThreadsResponse).Body.Threads
	if len(threads) != n {
		t.Fatalf("threads: %+v", threads)
	}
	c.call("pause", map[string]any{"threadId": threads[0].Id})
	c.stopped("pause")
	frames := c.call("stackTrace", map[string]any{"threadId": threads[n-1].Id}).(*godap.StackTraceResponse).Body.StackFrames
	if len(frames) < 2 || frames[0].Name != "compute" || frames[1].Name != "main" {
		t.Fatalf("the computing rank's stack: %+v", frames)
	}
	return threads
}

func waitFree(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var held []string
		for _, pid := range pids {
			if stopped, tracer := mpir.Traced(pid); stopped || tracer != 0 {
				held = append(held, fmt.Sprintf("%d (stopped %v, traced by %d)", pid, stopped, tracer))
			}
		}
		if len(held) == 0 {
			free(t, pids...)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still held 20s after the disconnect: %s", strings.Join(held, ", "))
		}
		time.Sleep(50 * time.Millisecond) // polling /proc: a process being let go sends no event here
	}
}

// Breakpoints of every kind on a C++ program's ranks (function,
// conditional, hit count, logpoint, one sdm cannot take), and its values:
// structs, arrays and references with their members, setting a member,
// reading memory.
func TestDAPBreakpointsAndValues(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	root, _ := filepath.Abs("..")
	source := filepath.Join(root, "examples", "values", "values.cpp")
	c := launchDAP(t, "launch", map[string]any{"program": filepath.Join(bin, "values"), "ranks": 2, "rm": "openmpi",
		"launcherArgs": []string{"--allow-run-as-root", "--oversubscribe"}, "cwd": root})
	fbs := c.call("setFunctionBreakpoints", map[string]any{"breakpoints": []any{map[string]any{"name": "advance"}}}).(*godap.SetFunctionBreakpointsResponse)
	if b := fbs.Body.Breakpoints; len(b) != 1 || !b[0].Verified {
		t.Fatalf("function breakpoint: %+v", b)
	}
	c.call("configurationDone", nil)
	c.stopped("breakpoint")
	bps := c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source}, "breakpoints": []any{
		map[string]any{"line": 36, "condition": "rank == 1", "hitCondition": "1"},
		map[string]any{"line": 37, "hitCondition": "% 2"},
		map[string]any{"line": 38, "logMessage": "rank {rank}: half {half}"},
	}}).(*godap.SetBreakpointsResponse).Body.Breakpoints
	if len(bps) != 3 || !bps[0].Verified || bps[1].Verified || !strings.Contains(bps[1].Message, "hit condition") || !bps[2].Verified {
		t.Fatalf("breakpoints: %+v", bps)
	}
	c.call("setFunctionBreakpoints", map[string]any{"breakpoints": []any{}})
	c.call("continue", map[string]any{"threadId": 1})
	stop := c.event("stopped").(*godap.StoppedEvent)
	if stop.Body.ThreadId != 2 || stop.Body.Reason != "breakpoint" || stop.Body.AllThreadsStopped {
		t.Fatalf("the conditional breakpoint stopped %+v; want rank 1 alone (rank 0 waits in MPI_Allreduce)", stop.Body)
	}
	frames := c.call("stackTrace", map[string]any{"threadId": 2}).(*godap.StackTraceResponse).Body.StackFrames
	if frames[0].Name != "advance" || frames[0].Line != 36 {
		t.Fatalf("rank 1 stopped at %+v", frames[0])
	}
	scopes := c.call("scopes", map[string]any{"frameId": frames[0].Id}).(*godap.ScopesResponse).Body.Scopes
	locals := c.call("variables", map[string]any{"variablesReference": scopes[0].VariablesReference}).(*godap.VariablesResponse).Body.Variables
	members := func(name string) []godap.Variable {
		t.Helper()
		for _, v := range locals {
			if v.Name == name && v.VariablesReference > 0 {
				return c.call("variables", map[string]any{"variablesReference": v.VariablesReference}).(*godap.VariablesResponse).Body.Variables
			}
		}
		t.Fatalf("no %s with members among %+v", name, locals)
		return nil
	}
	if corners := members("corners"); len(corners) != 4 || corners[3].Name != "[3]" || corners[3].Value != "3" {
		t.Errorf("corners: %+v", corners)
	}
	moved := members("moved")
	if len(moved) != 2 || !hasVariable(moved, "x", "2") {
		t.Fatalf("moved: %+v", moved)
	}
	for _, v := range locals {
		if v.Name == "moved" {
			set := c.call("setVariable", map[string]any{"variablesReference": v.VariablesReference, "name": "x", "value": "7"}).(*godap.SetVariableResponse)
			if set.Body.Value != "7" {
				t.Errorf("moved.x = 7 answered %q", set.Body.Value)
			}
		}
	}
	if r := c.call("evaluate", map[string]any{"expression": "moved.x", "frameId": frames[0].Id, "context": "hover"}).(*godap.EvaluateResponse); r.Body.Result != "7" {
		t.Errorf("moved.x after setting it: %q", r.Body.Result)
	}
	args := c.call("variables", map[string]any{"variablesReference": scopes[1].VariablesReference}).(*godap.VariablesResponse).Body.Variables
	var origin []godap.Variable
	for _, v := range args {
		if v.Name == "origin" && v.VariablesReference > 0 {
			origin = c.call("variables", map[string]any{"variablesReference": v.VariablesReference}).(*godap.VariablesResponse).Body.Variables
		}
	}
	if !hasVariable(origin, "y", "2.5") {
		t.Errorf("origin, a reference, has members %+v", origin)
	}
	mem := c.call("readMemory", map[string]any{"memoryReference": "&corners@1", "count": 16}).(*godap.ReadMemoryResponse)
	if data, err := base64.StdEncoding.DecodeString(mem.Body.Data); err != nil || len(data) != 16 || data[12] != 3 {
		t.Errorf("corners' 16 bytes: %v %v", data, err)
	}
	c.call("setBreakpoints", map[string]any{"source": map[string]any{"path": source}, "breakpoints": []any{
		map[string]any{"line": 38, "logMessage": "rank {rank}: half {half}"}}})
	c.call("continue", map[string]any{"threadId": 2})
	c.event("terminated")
	out := c.output()
	for _, want := range []string{"[0] rank 0: half 4", "[1] rank 1: half 5", "[1] rank 1: cycle 21, result"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
	c.call("disconnect", nil)
}

// The session that VS Code would drive, driven by Microsoft's DAP test
// client (@vscode/debugadapter-testsupport, under mocha): the npm
// packages are those editors/vscode/package-lock.json pins.
func TestDAPWithVSCodeTestClient(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	npm := testenv.RequireTool(t, "npm")
	testenv.RequireTool(t, "node")
	bin := testenv.Examples(t)
	root, _ := filepath.Abs("..")
	dir := filepath.Join(root, "editors", "vscode")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@vscode", "debugadapter-testsupport")); err != nil {
		install := testenv.Command(t, npm, "ci", "--no-audit", "--no-fund")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	mocha := testenv.Command(t, npm, "test")
	mocha.Dir = dir
	mocha.Env = append(os.Environ(), "SDM_BIN="+sdmBin, "SDM_EXAMPLES="+bin, "SDM_ROOT="+root)
	out, err := mocha.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "5 passing") {
		t.Fatalf("npm test: %v\n%s", err, out)
	}
}
