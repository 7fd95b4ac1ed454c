// Package sim is a simulated debugger behind the backend interface: each
// rank "runs" a program that exists only as a synthetic call stack. It lets
// the tree be tested and measured at thousands of processes (or a million
// ranks in one process) without paying for a real debugger per rank.
//
// The program named in the start command picks the scenario; see Scenario.
//
// What enters: the ops of the table through Do, of which it runs start,
// status, run, continue, halt, kill, where, sample, queues, evaluate (and
// so compare), dlopen and plant (the others answer
// backend.ErrUnsupported, from backend.Unsupported), and OpSleep.
// What leaves: their answers, and running, stopped and exited events.
package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/dlopen"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// OpSleep is a sim-only command that answers after the duration in its body
// (a msgpack time.Duration); it stands for a slow debugger command.
const OpSleep = "sim.sleep"

// RunTime is how long a simulated program runs after continue before it
// stops again, as if it hit a breakpoint.
var RunTime = 20 * time.Millisecond

// Sim is the simulated debugger of one rank.
type Sim struct {
	// The simulator leaves out every op not defined below: breakpoints,
	// steps, variables and the rest answer that the simulator has none.
	backend.Unsupported
	cfg    backend.Config
	events chan backend.Event

	mu       sync.Mutex
	state    wire.State
	stack    []wire.Frame
	program  wire.Start
	started  time.Time
	runTimer *time.Timer
	closed   bool
	// dl is kept and shown as a real debugger's would be; simulated
	// programs load no library.
	dl dlopen.Setting
}

// New returns the simulator of rank cfg.Rank of cfg.Size.
func New(cfg backend.Config) *Sim {
	return &Sim{
		Unsupported: backend.Unsupported{Backend: "sim"},
		cfg:         cfg,
		events:      make(chan backend.Event, 64),
		state:       wire.State{State: wire.StateNotStarted},
		dl:          dlopen.Default(),
	}
}

// Events implements backend.Backend.
func (s *Sim) Events() <-chan backend.Event { return s.events }

// Close implements backend.Backend.
func (s *Sim) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		if s.runTimer != nil {
			s.runTimer.Stop()
		}
		close(s.events)
	}
	return nil
}

// Do implements backend.Backend. Everything answers at once but OpSleep,
// which answers later without holding up the commands behind it.
func (s *Sim) Do(ctx context.Context, op string, body []byte, done func([]byte, error)) {
	if op == OpSleep {
		var d time.Duration
		if err := wire.Decode(body, &d); err != nil {
			done(nil, err)
			return
		}
		go func() {
			select {
			case <-time.After(d):
				done(wire.Encode("slept " + d.String()))
			case <-ctx.Done():
				done(nil, ctx.Err())
			}
		}()
		return
	}
	call, err := backend.Decode(op, body)
	if err != nil {
		done(nil, err)
		return
	}
	done(call(ctx, s))
}

// Start implements backend.Ops: the program names the scenario.
func (s *Sim) Start(_ context.Context, st wire.Start) (wire.State, error) {
	stack, err := Scenario(st.Program, st.Args, s.cfg.Rank, s.cfg.Size)
	if err != nil {
		return wire.State{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stack, s.program, s.started = stack, st, time.Now()
	s.state = wire.State{State: wire.StateStopped, Reason: "started", Frame: stack[0]}
	return s.state, nil
}

// Status implements backend.Ops.
func (s *Sim) Status(context.Context) (wire.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, nil
}

// Where implements backend.Ops.
func (s *Sim) Where(context.Context) (wire.Stack, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.need(wire.StateStopped); err != nil {
		return wire.Stack{}, err
	}
	return wire.Stack{Frames: s.stack}, nil
}

// Backtrace implements backend.Ops: the made-up stack, numbered, without
// arguments (the simulator has no values).
func (s *Sim) Backtrace(ctx context.Context, bt wire.Backtrace) (wire.Trace, error) {
	st, err := s.Where(ctx)
	if err != nil {
		return wire.Trace{}, err
	}
	low, high := 0, len(st.Frames)
	switch {
	case bt.Limit > 0 && bt.Limit < high:
		high = bt.Limit
	case bt.Limit < 0 && -bt.Limit < high:
		low = high + bt.Limit
	}
	tr := wire.Trace{More: high < len(st.Frames)}
	for i := low; i < high; i++ {
		tr.Levels = append(tr.Levels, wire.Level{Level: i, Frame: st.Frames[i]})
	}
	return tr, nil
}

// Run implements backend.Ops.
func (s *Sim) Run(context.Context) (wire.State, error) { return s.run() }

// Continue implements backend.Ops.
func (s *Sim) Continue(context.Context) (wire.State, error) { return s.run() }

// Halt implements backend.Ops.
func (s *Sim) Halt(context.Context) (wire.State, error) { return s.halt("signal-received"), nil }

// Kill implements backend.Ops.
func (s *Sim) Kill(context.Context) (wire.State, error) { return s.kill() }

// Plant implements backend.Ops: no load ever waits.
func (s *Sim) Plant(ctx context.Context) (wire.State, error) { return s.Status(ctx) }

// Dlopen implements backend.Ops.
func (s *Sim) Dlopen(_ context.Context, d wire.Dlopen) (wire.Dlopen, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dl, err := s.dl.Apply(d)
	if err != nil {
		return wire.Dlopen{}, err
	}
	s.dl = dl
	return s.dl.Answer(""), nil
}

// need fails unless the process is in state want. s.mu must be held.
func (s *Sim) need(want string) error {
	if s.state.State != want {
		return fmt.Errorf("process is %s, not %s", s.state.State, want)
	}
	return nil
}

func (s *Sim) run() (wire.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.need(wire.StateStopped); err != nil {
		return wire.State{}, err
	}
	s.state = wire.State{State: wire.StateRunning}
	s.emit(op.Running.Name, op.Running.Body(op.None{}))
	s.runTimer = time.AfterFunc(RunTime, func() { s.halt("breakpoint-hit") })
	return s.state, nil
}

func (s *Sim) halt(reason string) wire.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.State == wire.StateRunning {
		if s.runTimer != nil {
			s.runTimer.Stop()
		}
		s.state = wire.State{State: wire.StateStopped, Reason: reason, Frame: s.stack[0]}
		s.emit(op.Stopped.Name, op.Stopped.Body(s.state))
	}
	return s.state
}

func (s *Sim) kill() (wire.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.State == wire.StateNotStarted || s.state.State == wire.StateExited {
		return wire.State{}, fmt.Errorf("no process to kill (%s)", s.state.State)
	}
	if s.runTimer != nil {
		s.runTimer.Stop()
	}
	s.state = wire.State{State: wire.StateExited, Reason: "killed", Code: 137}
	s.emit(op.Exited.Name, op.Exited.Body(s.state))
	return s.state, nil
}

// emit queues an event. s.mu must be held, which also orders events.
func (s *Sim) emit(event string, body []byte) {
	if !s.closed {
		s.events <- backend.Event{Op: event, Body: body}
	}
}

// Evaluate implements backend.Ops for the made-up values every scenario
// has: rank, residual (a small number that grows with the rank, and one
// rank, the middle one, a hundred times over it) and grid (eight
// numbers, the fourth rank mod 4).
func (s *Sim) Evaluate(_ context.Context, e wire.Exprs) ([]wire.Value, error) {
	r, n := s.cfg.Rank, s.cfg.Size
	out := make([]wire.Value, len(e.Exprs))
	for i, x := range e.Exprs {
		switch strings.TrimSpace(x) {
		case "rank":
			out[i].Value = strconv.Itoa(r)
		case "residual":
			v := 1e-6 * float64(r%97+1)
			if r == n/2 {
				v *= 100
			}
			out[i].Value = strconv.FormatFloat(v, 'g', -1, 64)
		case "grid":
			out[i].Value = fmt.Sprintf("{1, 2, 3, %d, 5, 6, 7, 8}", r%4)
		default:
			out[i].Error = fmt.Sprintf("No symbol %q in current context.", x)
		}
	}
	return out, nil
}

// Queues implements backend.Ops: the made-up MPI operations of the
// scenario, waiting since the start.
func (s *Sim) Queues(context.Context) (wire.Queues, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.State == wire.StateNotStarted || s.state.State == wire.StateExited {
		return wire.Queues{}, fmt.Errorf("no process (%s)", s.state.State)
	}
	return ScenarioQueues(s.program.Program, s.program.Args, s.cfg.Rank, s.cfg.Size, time.Since(s.started)), nil
}

// Sample implements backend.Ops: the made-up stack, whatever the state,
// once per sample asked for; it never moves.
func (s *Sim) Sample(_ context.Context, req wire.Sample) (wire.CallTree, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := wire.CallTree{Samples: max(req.Count, 1)}
	if len(s.stack) > 0 {
		t.AddStack(s.cfg.Rank, s.stack)
	}
	t.Sort()
	return t, nil
}
