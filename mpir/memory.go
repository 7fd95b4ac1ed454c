package mpir

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxString bounds the strings read from the starter: a host or program
// name longer than this is not one.
const maxString = 4096

func (t *traced) read(addr uint64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := t.mem.ReadAt(buf, int64(addr)); err != nil {
		return nil, fmt.Errorf("read %d bytes at %#x: %w", n, addr, err)
	}
	return buf, nil
}

func (t *traced) write(addr uint64, data []byte) error {
	if _, err := t.mem.WriteAt(data, int64(addr)); err != nil {
		return fmt.Errorf("write %d bytes at %#x: %w", len(data), addr, err)
	}
	return nil
}

func (t *traced) readInt32(addr uint64) (int32, error) {
	b, err := t.read(addr, 4)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b)), nil
}

func (t *traced) writeInt32(addr uint64, v int32) error {
	return t.write(addr, binary.LittleEndian.AppendUint32(nil, uint32(v)))
}

func (t *traced) readPointer(addr uint64) (uint64, error) {
	b, err := t.read(addr, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// readString reads the NUL-terminated string at addr in small aligned
// blocks, which never cross a page: a string at the end of a mapping
// reads without a fault.
func (t *traced) readString(addr uint64) (string, error) {
	if addr == 0 {
		return "", nil
	}
	var out []byte
	for len(out) < maxString {
		n := 256 - int(addr%256) // stays within the page
		b, err := t.read(addr, n)
		if err != nil {
			return "", err
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(append(out, b[:i]...)), nil
		}
		out = append(out, b...)
		addr += uint64(n)
	}
	return "", fmt.Errorf("string at %#x: no end within %d bytes", addr, maxString)
}

// Wait statuses in waitid's siginfo (sys/wait.h).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// siginfoPid and siginfoCode read waitid's answer: si_pid is the first
// field after the header of three ints and padding.
func siginfoPid(info *unix.Siginfo) int {
	b := (*[128]byte)(unsafe.Pointer(info))
	return int(int32(binary.NativeEndian.Uint32(b[16:])))
}

func siginfoCode(info *unix.Siginfo) int { return int(info.Code) }

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
