package testenv

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// ProcessTimeout bounds every process a test starts through Command: a
// child that hangs is killed and its test fails within minutes, instead of
// holding the whole run until go test's own -timeout.
const ProcessTimeout = 10 * time.Minute

// Command is exec.Command under a context with a deadline: ProcessTimeout,
// or the test's own deadline less a margin, whichever comes first. The
// process runs in a process group of its own, and the group is killed at
// the deadline and when the test ends, so that nothing a launcher started
// outlives the test. A process killed at its deadline fails the test,
// saying so.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	deadline := time.Now().Add(ProcessTimeout)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := d.Deadline(); ok && td.Add(-15*time.Second).Before(deadline) {
			deadline = td.Add(-15 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	cmd := group(exec.CommandContext(ctx, name, args...))
	kill := cmd.Cancel
	cmd.Cancel = func() error {
		if ctx.Err() == context.DeadlineExceeded {
			t.Errorf("%v: still running at its deadline (%s): killed", cmd.Args, deadline.Format(time.TimeOnly))
		}
		return kill()
	}
	return cmd
}

// CommandTimeout is Command for code that has no test at hand (TestMain,
// a build that several tests share): the deadline is d from now, and the
// caller calls cancel once the process is done.
func CommandTimeout(d time.Duration, name string, args ...string) (cmd *exec.Cmd, cancel context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	return group(exec.CommandContext(ctx, name, args...)), cancel
}

// group puts cmd in a process group of its own, which its cancellation
// kills whole; WaitDelay stops a wait for output that orphans still hold.
func group(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
