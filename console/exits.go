package console

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// ProgramExit ends a session whose status is its program's
// (Options.ProgramStatus): the worst exit status of its ranks, 128 + the
// signal's number for a rank a signal ended, 1 for ranks that had not
// ended when the session did.
type ProgramExit struct {
	Code  int
	Ranks wire.RankSet // the ranks that gave Code
	What  string       // what they did: "exited with code 3", "killed by SIGSEGV"
}

func (e *ProgramExit) Error() string {
	return fmt.Sprintf("the program's exit status is %d: [%v] %s", e.Code, e.Ranks, e.What)
}

// ExitStatus is the flag that says what sdm's exit status tells: "sdm"
// (false: whether every command and answer went well) or "program" (true:
// Options.ProgramStatus).
type ExitStatus bool

func (e *ExitStatus) String() string {
	if *e {
		return "program"
	}
	return "sdm"
}

// Set implements pflag.Value.
func (e *ExitStatus) Set(s string) error {
	switch s {
	case "sdm", "program":
		*e = s == "program"
		return nil
	}
	return fmt.Errorf("want sdm or program")
}

// Type implements pflag.Value.
func (e *ExitStatus) Type() string { return "string" }

// WorseExit is, of two ends of sessions, the one whose program ended
// worse (a ProgramExit of the higher code), or nil when neither is a
// ProgramExit: the status of sdm listen's sessions.
func WorseExit(a, b error) error {
	var pa, pb *ProgramExit
	if !errors.As(b, &pb) {
		return a
	}
	if errors.As(a, &pa) && pa.Code >= pb.Code {
		return a
	}
	return b
}

// ExitCode is the exit status of a program that ended as st says: its
// code, or 128 + the number of the signal that ended it (SIGKILL's for
// one the kill command or gdb's end killed).
func ExitCode(st wire.State) int {
	switch {
	case st.Signal != "":
		return 128 + int(unix.SignalNum(st.Signal))
	case st.Reason == "killed":
		return 128 + int(unix.SIGKILL)
	}
	return st.Code
}

// exits are the ends of the ranks' programs as the events told them,
// for Options.ProgramStatus.
type exits struct {
	ended wire.RankSet
	worst ProgramExit
}

// recordExit notes the end of the program of an exited event's ranks.
func (c *Console) recordExit(ev client.Event) {
	var st wire.State
	if ev.Op != wire.EventExited || wire.Decode(ev.Group.Body, &st) != nil {
		return
	}
	code, what := ExitCode(st), stateText(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exits.ended = c.exits.ended.Union(ev.Group.Ranks)
	switch w := &c.exits.worst; {
	case code > w.Code || w.Ranks.Empty():
		*w = ProgramExit{Code: code, Ranks: ev.Group.Ranks, What: what}
	case code == w.Code && what == w.What:
		w.Ranks = w.Ranks.Union(ev.Group.Ranks)
	}
}

// forgetExits starts the count again, for a job started again.
func (c *Console) forgetExits() {
	c.mu.Lock()
	c.exits = exits{}
	c.mu.Unlock()
}

// programExit is the session's end as its program's status says: nil
// when every rank exited with 0.
func (c *Console) programExit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if left := wire.All(c.s.Size()).Minus(c.exits.ended); !left.Empty() && c.exits.worst.Code < 1 {
		return &ProgramExit{Code: 1, Ranks: left, What: "had not ended when the session did"}
	}
	if c.exits.worst.Code == 0 {
		return nil
	}
	w := c.exits.worst
	return &w
}
