package debugregs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Offsets in struct user (sys/user.h) of the debug registers DR0 and
// DR7.
const (
	atEntry = 9 // AT_ENTRY, the program's entry point (elf.h)

	dr0 = 848
	dr7 = dr0 + 7*8
)

// probe starts a program under ptrace, stopped at its exec, sets an
// execution breakpoint on its entry point in DR0 and lets it go: the
// debug registers work when it traps there before it ends.
func probe() (bool, error) {
	prog, err := exec.LookPath("true")
	if err != nil {
		return false, err
	}
	// ptrace's requests come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	pid := cmd.Process.Pid
	// Bounded: a probe that does not end within a second is ended. The
	// kills go through the process's pidfd: the program may be reaped by
	// then, and its pid another process's.
	guard := time.AfterFunc(time.Second, func() { cmd.Process.Kill() })
	defer guard.Stop()
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return false, fmt.Errorf("probe: no stop at exec (%v, %v)", ws, err)
	}
	entry, err := entryPoint(pid)
	if err != nil {
		return false, err
	}
	word := make([]byte, 8)
	binary.LittleEndian.PutUint64(word, entry)
	if _, err := unix.PtracePokeUser(pid, dr0, word); err != nil {
		return false, fmt.Errorf("probe: set DR0: %w", err)
	}
	binary.LittleEndian.PutUint64(word, 1) // L0: DR0, on execution
	if _, err := unix.PtracePokeUser(pid, dr7, word); err != nil {
		return false, fmt.Errorf("probe: set DR7: %w", err)
	}
	if err := unix.PtraceCont(pid, 0); err != nil {
		return false, err
	}
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return false, err
	}
	// A trap, or the end of a program that ran past its entry point.
	return ws.Stopped() && ws.StopSignal() == unix.SIGTRAP, nil
}

// entryPoint is AT_ENTRY of process pid's auxiliary vector.
func entryPoint(pid int) (uint64, error) {
	auxv, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(auxv); i += 16 {
		if binary.LittleEndian.Uint64(auxv[i:]) == atEntry {
			return binary.LittleEndian.Uint64(auxv[i+8:]), nil
		}
	}
	return 0, errors.New("probe: no AT_ENTRY in the auxiliary vector")
}
