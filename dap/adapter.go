package dap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/wire"
)

// Options tune an adapter.
type Options struct {
	// SDM is the sdm executable the rank servers run (default: this one).
	SDM string
	// Timeout bounds how long a command waits for its ranks (default 30 s).
	Timeout time.Duration
	// Window is how long stops are gathered into one stopped event while
	// other ranks still run (default 100 ms, as the console's).
	Window time.Duration
	// Log gets what the adapter, the launcher and the ranks' servers
	// complain about (discarded when nil).
	Log *log.Logger
}

// Serve speaks DAP on r and w until the client disconnects, its stream
// ends or ctx ends. By then the job it launched has ended and a job it
// attached to has been let go, whichever way the session ended.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) error {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Window <= 0 {
		opts.Window = 100 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = log.New(io.Discard, "", 0)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &adapter{c: newConn(r, w), opts: opts, ctx: ctx, handles: newHandles()}
	defer a.endJob(false)
	// Messages, and the frames that could not be read, are answered in
	// the order they came.
	type frame struct {
		body []byte
		bad  error
	}
	frames := make(chan frame)
	var readErr error
	go func() {
		defer close(frames)
		for {
			body, err := a.c.read()
			var bad *frameError
			if err != nil && !errors.As(err, &bad) {
				// The client is gone: what it asked for last (a launch
				// that takes a minute, say) is called off.
				readErr = err
				cancel()
				return
			}
			select {
			case frames <- frame{body, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				if errors.Is(readErr, io.EOF) {
					return nil // the client went: its job goes with it
				}
				return readErr
			}
			if f.bad != nil {
				a.fail(0, "", fmt.Errorf("a malformed message: %v", f.bad))
			} else if a.handle(f.body) {
				return nil
			}
		case <-ctx.Done():
			if parent.Err() != nil {
				return parent.Err()
			}
			if errors.Is(readErr, io.EOF) {
				return nil
			}
			return readErr
		}
	}
}

// adapter is one client's session.
type adapter struct {
	c    *conn
	opts Options
	ctx  context.Context // ends when the client goes

	initialized bool // the initialize request was answered
	configured  bool // configurationDone was
	mu          sync.Mutex
	job         *job     // nil before launch or attach; guarded by mu
	handles     *handles // frames and variables of stopped ranks; guarded by mu
	bps         breakpoints
}

// codec decodes the standard requests and sdm's own; made at the first
// message, not at every sdm's start (a rank server has no use for it).
var codec = sync.OnceValue(func() *godap.Codec {
	c := godap.NewCodec()
	c.RegisterRequest(stacksCommand, func() godap.Message { return &StacksRequest{} }, func() godap.Message { return &StacksResponse{} })
	c.RegisterRequest(deadlockCommand, func() godap.Message { return &DeadlockRequest{} }, func() godap.Message { return &DeadlockResponse{} })
	c.RegisterRequest(queuesCommand, func() godap.Message { return &QueuesRequest{} }, func() godap.Message { return &QueuesResponse{} })
	c.RegisterRequest(compareCommand, func() godap.Message { return &CompareRequest{} }, func() godap.Message { return &CompareResponse{} })
	return c
})

// handle answers one message; true when the session is over.
func (a *adapter) handle(body []byte) bool {
	msg, err := codec().DecodeMessage(body)
	if err != nil {
		var head struct {
			Seq     int    `json:"seq"`
			Type    string `json:"type"`
			Command string `json:"command"`
		}
		if json.Unmarshal(body, &head) != nil {
			a.fail(0, "", fmt.Errorf("a message that is not JSON: %v", err))
			return false
		}
		var field *godap.DecodeProtocolMessageFieldError
		switch {
		case head.Type == "request" && errors.As(err, &field):
			a.fail(head.Seq, head.Command, fmt.Errorf("sdm does not know the request %q", head.Command))
		case head.Type == "request":
			a.fail(head.Seq, head.Command, fmt.Errorf("%s: bad arguments: %v", head.Command, err))
		default:
			a.fail(head.Seq, head.Command, fmt.Errorf("a %q message where a request was expected", head.Type))
		}
		return false
	}
	req, ok := msg.(godap.RequestMessage)
	if !ok {
		return false // responses to reverse requests: sdm sends none
	}
	r := req.GetRequest()
	if !a.initialized && r.Command != "initialize" {
		a.fail(r.Seq, r.Command, errors.New("initialize comes first"))
		return false
	}
	done, err := a.dispatch(msg)
	if err != nil {
		a.fail(r.Seq, r.Command, err)
	}
	return done
}

// dispatch runs a request and sends its response; an error is sent as
// the error response instead.
func (a *adapter) dispatch(msg godap.Message) (done bool, err error) {
	switch m := msg.(type) {
	case *godap.InitializeRequest:
		return false, a.initialize(m)
	case *godap.LaunchRequest:
		return false, a.launch(m)
	case *godap.AttachRequest:
		return false, a.attach(m)
	case *godap.ConfigurationDoneRequest:
		return false, a.configurationDone(m)
	case *godap.SetBreakpointsRequest:
		return false, a.setBreakpoints(m)
	case *godap.SetFunctionBreakpointsRequest:
		return false, a.setFunctionBreakpoints(m)
	case *godap.SetExceptionBreakpointsRequest:
		return false, a.send(&godap.SetExceptionBreakpointsResponse{Response: ok(m.Request)})
	case *godap.ThreadsRequest:
		return false, a.threads(m)
	case *godap.StackTraceRequest:
		return false, a.stackTrace(m)
	case *godap.ScopesRequest:
		return false, a.scopes(m)
	case *godap.VariablesRequest:
		return false, a.variables(m)
	case *godap.SetVariableRequest:
		return false, a.setVariable(m)
	case *godap.EvaluateRequest:
		return false, a.evaluate(m)
	case *godap.ReadMemoryRequest:
		return false, a.readMemory(m)
	case *godap.ContinueRequest:
		return false, a.resume(m.Request, m.Arguments.ThreadId, wire.OpCont, nil)
	case *godap.NextRequest:
		return false, a.resume(m.Request, m.Arguments.ThreadId, wire.OpNext, wire.MustEncode(wire.Count{N: 1}))
	case *godap.StepInRequest:
		return false, a.resume(m.Request, m.Arguments.ThreadId, wire.OpStep, wire.MustEncode(wire.Count{N: 1}))
	case *godap.StepOutRequest:
		return false, a.resume(m.Request, m.Arguments.ThreadId, wire.OpFinish, nil)
	case *godap.PauseRequest:
		return false, a.pause(m)
	case *StacksRequest:
		return false, a.stacks(m)
	case *DeadlockRequest:
		return false, a.deadlock(m)
	case *QueuesRequest:
		return false, a.queues(m)
	case *CompareRequest:
		return false, a.compare(m)
	case *godap.TerminateRequest:
		return false, a.terminate(m)
	case *godap.DisconnectRequest:
		return true, a.disconnect(m)
	}
	r := msg.(godap.RequestMessage).GetRequest()
	return false, fmt.Errorf("sdm does not support the request %q", r.Command)
}

// initialize says what the adapter can do.
func (a *adapter) initialize(m *godap.InitializeRequest) error {
	if a.initialized {
		return errors.New("initialize came twice")
	}
	a.initialized = true
	return a.send(&godap.InitializeResponse{Response: ok(m.Request), Body: godap.Capabilities{
		SupportsConfigurationDoneRequest:  true,
		SupportsFunctionBreakpoints:       true,
		SupportsConditionalBreakpoints:    true,
		SupportsHitConditionalBreakpoints: true,
		SupportsLogPoints:                 true,
		SupportsEvaluateForHovers:         true,
		SupportsSetVariable:               true,
		SupportsReadMemoryRequest:         true,
		SupportsTerminateRequest:          true,
		SupportTerminateDebuggee:          true,
	}})
}

// ok is the successful response to r.
func ok(r godap.Request) godap.Response {
	return godap.Response{RequestSeq: r.Seq, Success: true, Command: r.Command}
}

// send writes a message; a client that went is no error of the request's.
func (a *adapter) send(m godap.Message) error {
	if err := a.c.write(m); err != nil {
		a.opts.Log.Printf("dap: writing to the client: %v", err)
	}
	return nil
}

// fail sends the error response to request seq.
func (a *adapter) fail(seq int, command string, err error) {
	a.send(&godap.ErrorResponse{
		Response: godap.Response{RequestSeq: seq, Success: false, Command: command, Message: err.Error()},
		Body:     godap.ErrorResponseBody{Error: &godap.ErrorMessage{Format: err.Error(), ShowUser: true}},
	})
}

// output sends text to the client's debug console, in category
// (console, stdout, stderr).
func (a *adapter) output(category, text string) {
	a.send(&godap.OutputEvent{Event: godap.Event{Event: "output"}, Body: godap.OutputEventBody{Category: category, Output: text}})
}
