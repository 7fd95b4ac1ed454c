package testenv

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"
)

// WaitStopped waits until process pid is stopped by a signal (state T in
// /proc/PID/stat), for at most a minute: a SIGSTOP takes effect only when
// the process next runs, so a test that stops a process and at once asks
// something of it may still get the answer of a running one. No event
// tells a process that is not the parent of the stopped one, so it looks
// every millisecond.
func WaitStopped(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatalf("process %d: %v", pid, err)
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped a minute after its SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}
