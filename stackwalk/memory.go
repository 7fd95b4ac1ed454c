package stackwalk

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procMem reads a process's memory with process_vm_readv (one system call,
// no file), falling back to /proc/PID/mem where that call fails: special
// mappings, and kernels or sandboxes that refuse it.
type procMem struct {
	pid int
	mem *os.File
}

func (m *procMem) readAt(b []byte, addr uint64) error {
	if len(b) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(m.pid, local, remote, 0)
	if err == nil && n == len(b) {
		return nil
	}
	// /proc/PID/mem reads what process_vm_readv cannot: the vdso, which
	// is not ordinary memory to pin.
	if m.mem == nil {
		f, oerr := os.Open("/proc/" + strconv.Itoa(m.pid) + "/mem")
		if oerr != nil {
			return fmt.Errorf("read process %d's memory: %v; %v", m.pid, err, oerr)
		}
		m.mem = f
	}
	if _, err := m.mem.ReadAt(b, int64(addr)); err != nil {
		return fmt.Errorf("read process %d's memory at %#x: %w", m.pid, addr, err)
	}
	return nil
}

func (m *procMem) read64(addr uint64) (uint64, error) {
	var b [8]byte
	if err := m.readAt(b[:], addr); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

func (m *procMem) close() {
	if m.mem != nil {
		m.mem.Close()
	}
}
