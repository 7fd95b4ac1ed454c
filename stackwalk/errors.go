package stackwalk

import (
	"errors"
	"fmt"
)

// ErrGone is wrapped by the error of a sample whose process exited before
// or while it was sampled.
var ErrGone = errors.New("process exited")

func gone(pid int) error { return fmt.Errorf("process %d: %w", pid, ErrGone) }

// PermissionError says that the kernel refused to let this process trace
// the one asked for, and why, as far as /proc tells.
type PermissionError struct {
	PID    int
	Reason string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("process %d: not permitted to trace it: %s", e.PID, e.Reason)
}

// ArchError is the error of a sample on an architecture the sampler does
// not unwind, or of a process of another architecture.
type ArchError struct {
	Arch string
}

func (e *ArchError) Error() string {
	return "stack sampling needs amd64; this is " + e.Arch
}
