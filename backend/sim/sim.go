// Package sim is a simulated debugger behind the backend interface: each
// rank "runs" a program that exists only as a synthetic call stack. It lets
// the tree be tested and measured at thousands of processes (or a million
// ranks in one process) without paying for a real debugger per rank.
//
// The program named in the start command picks the scenario; see Scenario.
package sim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/dlopen"
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
	cfg    backend.Config
	events chan backend.Event

	mu       sync.Mutex
	state    wire.State
	stack    []wire.Frame
	runTimer *time.Timer
	closed   bool
	// dl is kept and shown as a real debugger's would be; simulated
	// programs load no library.
	dl dlopen.Setting
}

// New returns the simulator of rank cfg.Rank of cfg.Size.
func New(cfg backend.Config) *Sim {
	return &Sim{
		cfg:    cfg,
		events: make(chan backend.Event, 64),
		state:  wire.State{State: wire.StateNotStarted},
		dl:     dlopen.Default(),
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
	done(s.do(op, body))
}

func (s *Sim) do(op string, body []byte) ([]byte, error) {
	switch op {
	case wire.OpStart:
		var st wire.Start
		if err := wire.Decode(body, &st); err != nil {
			return nil, err
		}
		stack, err := Scenario(st.Program, st.Args, s.cfg.Rank, s.cfg.Size)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stack = stack
		s.state = wire.State{State: wire.StateStopped, Reason: "started", Frame: stack[0]}
		return wire.Encode(s.state)
	case wire.OpStatus:
		s.mu.Lock()
		defer s.mu.Unlock()
		return wire.Encode(s.state)
	case wire.OpWhere:
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.need(wire.StateStopped); err != nil {
			return nil, err
		}
		return wire.Encode(wire.Stack{Frames: s.stack})
	case wire.OpRun, wire.OpCont:
		return s.run()
	case wire.OpHalt:
		return s.halt("signal-received")
	case wire.OpKill:
		return s.kill()
	case wire.OpDlopen:
		return s.setDlopen(body)
	case wire.OpPlant:
		s.mu.Lock()
		defer s.mu.Unlock()
		return wire.Encode(s.state) // no load ever waits
	}
	return nil, fmt.Errorf("%w %q", backend.ErrUnknownOp, op)
}

func (s *Sim) setDlopen(body []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(body) > 0 {
		var d wire.Dlopen
		if err := wire.Decode(body, &d); err != nil {
			return nil, err
		}
		dl, err := s.dl.Apply(d)
		if err != nil {
			return nil, err
		}
		s.dl = dl
	}
	return wire.Encode(s.dl.Answer(""))
}

// need fails unless the process is in state want. s.mu must be held.
func (s *Sim) need(want string) error {
	if s.state.State != want {
		return fmt.Errorf("process is %s, not %s", s.state.State, want)
	}
	return nil
}

func (s *Sim) run() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.need(wire.StateStopped); err != nil {
		return nil, err
	}
	s.state = wire.State{State: wire.StateRunning}
	s.emit(wire.EventRunning, nil)
	s.runTimer = time.AfterFunc(RunTime, func() { s.halt("breakpoint-hit") })
	return wire.Encode(s.state)
}

func (s *Sim) halt(reason string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.State == wire.StateRunning {
		if s.runTimer != nil {
			s.runTimer.Stop()
		}
		s.state = wire.State{State: wire.StateStopped, Reason: reason, Frame: s.stack[0]}
		s.emit(wire.EventStopped, wire.MustEncode(s.state))
	}
	return wire.Encode(s.state)
}

func (s *Sim) kill() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.State == wire.StateNotStarted || s.state.State == wire.StateExited {
		return nil, fmt.Errorf("no process to kill (%s)", s.state.State)
	}
	if s.runTimer != nil {
		s.runTimer.Stop()
	}
	s.state = wire.State{State: wire.StateExited, Reason: "killed", Code: 137}
	s.emit(wire.EventExited, wire.MustEncode(s.state))
	return wire.Encode(s.state)
}

// emit queues an event. s.mu must be held, which also orders events.
func (s *Sim) emit(op string, body []byte) {
	if !s.closed {
		s.events <- backend.Event{Op: op, Body: body}
	}
}
