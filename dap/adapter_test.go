package dap

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	godap "github.com/google/go-dap"
)

// dapClient is a DAP client over pipes to an adapter that Serve runs.
type dapClient struct {
	t    *testing.T
	w    io.WriteCloser
	msgs chan godap.Message
	seq  int
	done chan error
}

func serve(t *testing.T) *dapClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &dapClient{t: t, w: inW, msgs: make(chan godap.Message, 100), done: make(chan error, 1)}
	go func() {
		c.done <- Serve(ctx, inR, outW, Options{Timeout: 5 * time.Second})
		outW.Close()
	}()
	go func() {
		defer close(c.msgs)
		r := bufio.NewReader(outR)
		for {
			m, err := godap.ReadProtocolMessage(r)
			if err != nil {
				return
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("the adapter did not end when its client went")
		}
		cancel()
	})
	return c
}

// raw writes bytes as they are.
func (c *dapClient) raw(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, s); err != nil {
		c.t.Fatal(err)
	}
}

// request sends a request with arguments and returns its seq.
func (c *dapClient) request(command string, args any) int {
	c.t.Helper()
	c.seq++
	m := map[string]any{"seq": c.seq, "type": "request", "command": command}
	if args != nil {
		m["arguments"] = args
	}
	body, _ := json.Marshal(m)
	c.raw(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
	return c.seq
}

// response waits for the response to seq, skipping events.
func (c *dapClient) response(seq int) godap.ResponseMessage {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("the adapter ended before answering request %d", seq)
			}
			if r, ok := m.(godap.ResponseMessage); ok && r.GetResponse().RequestSeq == seq {
				return r
			}
		case <-deadline:
			c.t.Fatalf("no response to request %d within 20s", seq)
		}
	}
}

// failure waits for the error response to seq and returns its message.
func (c *dapClient) failure(seq int) string {
	c.t.Helper()
	r := c.response(seq).GetResponse()
	if r.Success {
		c.t.Fatalf("request %d (%s) succeeded; want an error", seq, r.Command)
	}
	return r.Message
}

func (c *dapClient) initialize() {
	c.t.Helper()
	r := c.response(c.request("initialize", map[string]any{"adapterID": "sdm"}))
	if !r.GetResponse().Success {
		c.t.Fatalf("initialize: %s", r.GetResponse().Message)
	}
}

func TestRequestsOutOfOrderGetErrors(t *testing.T) {
	c := serve(t)
	if msg := c.failure(c.request("threads", nil)); !strings.Contains(msg, "initialize comes first") {
		t.Errorf("threads before initialize: %q", msg)
	}
	c.initialize()
	if msg := c.failure(c.request("initialize", map[string]any{"adapterID": "sdm"})); !strings.Contains(msg, "twice") {
		t.Errorf("initialize again: %q", msg)
	}
	for _, req := range []struct {
		command string
		args    any
	}{
		{"stackTrace", map[string]any{"threadId": 1}},
		{"configurationDone", nil},
		{"continue", map[string]any{"threadId": 1}},
		{"setBreakpoints", map[string]any{"source": map[string]any{"path": "/x.c"}, "breakpoints": []any{map[string]any{"line": 3}}}},
		{"evaluate", map[string]any{"expression": "x", "context": "repl"}},
		{"sdm/stacks", nil},
		{"sdm/deadlock", nil},
		{"sdm/queues", nil},
		{"sdm/compare", map[string]any{"expression": "x"}},
	} {
		if msg := c.failure(c.request(req.command, req.args)); !strings.Contains(msg, "launch or attach first") {
			t.Errorf("%s before launch: %q", req.command, msg)
		}
	}
	// threads before launch: none, not an error (editors ask early).
	if r, ok := c.response(c.request("threads", nil)).(*godap.ThreadsResponse); !ok || len(r.Body.Threads) != 0 {
		t.Errorf("threads before launch: %#v", r)
	}
}

func TestBadInputGetsErrorsAndTheSessionGoesOn(t *testing.T) {
	c := serve(t)
	c.initialize()
	if msg := c.failure(c.request("flyToTheMoon", nil)); !strings.Contains(msg, `does not know the request "flyToTheMoon"`) {
		t.Errorf("unknown request: %q", msg)
	}
	if msg := c.failure(c.request("launch", map[string]any{"program": "/bin/true", "rankz": 4})); !strings.Contains(msg, `unknown field "rankz"`) {
		t.Errorf("misspelt launch field: %q", msg)
	}
	if msg := c.failure(c.request("launch", map[string]any{"ranks": 4})); !strings.Contains(msg, "no program given") {
		t.Errorf("launch without a program: %q", msg)
	}
	if msg := c.failure(c.request("launch", map[string]any{"program": "/no/such/program", "ranks": 2, "rm": "local"})); !strings.Contains(msg, "/no/such/program") {
		t.Errorf("launch of a missing program: %q", msg)
	}
	if msg := c.failure(c.request("launch", map[string]any{"program": "/bin/true", "ranks": 2, "rm": "pe", "launcherArgs": []string{}})); !strings.Contains(msg, "poe") {
		t.Errorf("launch under a launcher that is not there: %q", msg)
	}
	if msg := c.failure(c.request("attach", map[string]any{})); !strings.Contains(msg, "--pid PID of the job's starter is needed") {
		t.Errorf("attach without a pid: %q", msg)
	}
	// Frames that are not DAP: each an error response (request_seq 0),
	// then the session goes on at the next header.
	c.raw("Content-Length: 5\r\n\r\n{\"se")
	c.raw("hello\r\n")
	c.raw("Content-Length: 4\r\n\r\n[1,2")
	c.raw("Content-Length: x\r\n\r\n")
	for _, want := range []string{"not JSON", "not a header", "not JSON", "not a length"} {
		if msg := c.failure(0); !strings.Contains(msg, want) {
			t.Errorf("a malformed frame answered %q, want %q", msg, want)
		}
	}
	if r, ok := c.response(c.request("threads", nil)).(*godap.ThreadsResponse); !ok || !r.Success {
		t.Errorf("after malformed frames, threads answered %#v", r)
	}
}

func TestDisconnectEndsTheSession(t *testing.T) {
	c := serve(t)
	c.initialize()
	if r := c.response(c.request("disconnect", nil)); !r.GetResponse().Success {
		t.Fatalf("disconnect: %s", r.GetResponse().Message)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Errorf("the adapter ended with %v", err)
		}
		c.done <- err
	case <-time.After(10 * time.Second):
		t.Fatal("the adapter did not end at disconnect")
	}
}
