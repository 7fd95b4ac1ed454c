package testenv

import (
	"syscall"
	"testing"
	"time"
)

// ChildrenCPU is the CPU of every process this one has reaped, with the
// processes they reaped in turn: a benchmark's measure of what the
// processes it started cost.
func ChildrenCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
