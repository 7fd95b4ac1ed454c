// Package resident trims what a process keeps mapped of its own
// executable.
//
// A rank server runs a fraction of its code once it is up, but it keeps
// mapped every page of the executable it touched on the way, and more:
// the kernel maps the pages around each one that faults. Those pages
// are shared with every other server of the host, yet each server's RSS
// counts them all, and resource managers that add up the RSS of a job's
// processes (SLURM's jobacct_gather/linux, its memory limits among them)
// charge a host's hundred servers a hundred times for one executable.
package resident

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// DropExecutable unmaps the read-only pages of the running executable
// (its code and constants): what the process uses after comes back from
// the page cache as it is touched, at the cost of a page fault. Writable
// mappings (the program's variables) are left alone, and a process under
// a debugger is left as it is: the breakpoints a debugger writes into the
// code are private copies of its pages, which unmapping would discard.
func DropExecutable() error {
	if traced() {
		return nil
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	return readOnly(maps, exe, func(lo, hi uint64) error {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), unix.MADV_DONTNEED); e != 0 {
			return fmt.Errorf("resident: unmapping %s's pages %#x-%#x: %w", exe, lo, hi, e)
		}
		return nil
	})
}

// readOnly calls fn with the bounds of each read-only mapping of exe in
// maps (as /proc/PID/maps gives them), and stops at its first error.
func readOnly(maps []byte, exe string, fn func(lo, hi uint64) error) error {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := bytes.Fields(sc.Bytes())
		if len(f) != 6 || string(f[5]) != exe || len(f[1]) != 4 || f[1][1] != '-' {
			continue
		}
		start, end, ok := bytes.Cut(f[0], []byte("-"))
		lo, err1 := strconv.ParseUint(string(start), 16, 64)
		hi, err2 := strconv.ParseUint(string(end), 16, 64)
		if !ok || err1 != nil || err2 != nil || hi <= lo {
			return fmt.Errorf("resident: unreadable line of /proc/self/maps: %q", sc.Bytes())
		}
		if err := fn(lo, hi); err != nil {
			return err
		}
	}
	return sc.Err()
}

// traced says whether a debugger is attached to this process.
func traced() bool {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true
	}
	for line := range bytes.Lines(status) {
		if pid, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return string(bytes.TrimSpace(pid)) != "0"
		}
	}
	return true
}
