// Package mpiq reads the MPI operations a rank has in flight: its pending
// sends and receives, the collectives and waits it is in, as the
// interposition library lib/sdmq.c, preloaded into the rank, keeps them
// in a file of the rank's own (SDMQ_DIR/PID) that the rank's server reads
// at any time without stopping the rank.
//
// The file (version 1, little-endian) is a 64-byte header, then slots of
// slot_size bytes:
//
//	header: magic "SDMQ", version, slots, slot_size (u32 each); world
//	        rank, world size, pid, reserved (i32); started (i64, ns of
//	        CLOCK_MONOTONIC at MPI_Init)
//	slot:   seq, busy (u32); kind, flags (u16); peer, tag, comm_size (i32);
//	        comm (u32); count, root (i32); tid (u32); bytes (i64); request
//	        (u64); start (i64, ns of CLOCK_MONOTONIC); caller (u64)
//
// A slot is one operation while busy is 1 and kind is not 0; the library
// makes seq odd while it writes the slot.
package mpiq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Kind is the MPI routine of an operation.
type Kind uint16

// The kinds, as lib/sdmq.c numbers them.
const (
	Send Kind = iota + 1
	Ssend
	Bsend
	Rsend
	Recv
	Sendrecv
	Probe
	Isend
	Irecv
	Wait
	Waitall
	Waitany
	Waitsome
	Barrier
	Bcast
	Reduce
	Allreduce
	Gather
	Scatter
	Allgather
	Alltoall
	Finalize
)

var kindNames = [...]string{"", "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Sendrecv", "MPI_Probe",
	"MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Barrier", "MPI_Bcast",
	"MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall", "MPI_Finalize"}

// String is the routine's C name.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", k)
}

// Ranks that are not ranks, in Op.Peer and Op.Root.
const (
	AnySource = -1 // MPI_ANY_SOURCE
	NoRank    = -2 // the operation has no peer or root
	Unknown   = -3 // a rank of a communicator the library could not map
	ProcNull  = -4 // MPI_PROC_NULL
)

// AnyTag is MPI_ANY_TAG in Op.Tag.
const AnyTag = -1

// Op is an operation in flight.
type Op struct {
	Kind     Kind
	Peer     int // world rank, or AnySource, NoRank, Unknown, ProcNull
	Tag      int
	Comm     uint32 // 0: MPI_COMM_WORLD; others numbered by the rank
	CommSize int
	Count    int // elements, or requests for a wait
	Root     int // world rank, or NoRank
	Thread   int
	Bytes    int64
	Request  uint64        // a nonblocking operation's request
	Waiting  time.Duration // since the call, when read
	Caller   uint64        // the return address into the program
}

// Table is a rank's operations in flight.
type Table struct {
	Rank, Size, Pid int
	Ops             []Op
}

const (
	magic      = 0x514d4453
	version    = 1
	headerSize = 64
	slotSize   = 80
	maxSlots   = 1 << 16
	// retries bounds the rereads of a file whose slots were being
	// written each time.
	retries = 8
)

// ErrNotYet is a file whose header the library has not finished.
var ErrNotYet = errors.New("the rank has not started MPI yet")

// Read reads the table of the file at path: the operations whose slots
// read the same twice (none was being written).
func Read(path string) (Table, error) {
	var t Table
	for range retries {
		a, err := os.ReadFile(path)
		if err != nil {
			return Table{}, err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return Table{}, err
		}
		var torn bool
		t, torn, err = parse(a, b, monotonic())
		if err != nil || !torn {
			return t, err
		}
	}
	return t, nil // slots written in every read are left out
}

// Parse reads the table of a file's contents read once, now being the
// reader's CLOCK_MONOTONIC in ns. A slot being written is left out.
func Parse(data []byte, now int64) (Table, error) {
	t, _, err := parse(data, data, now)
	return t, err
}

// parse reads a table from two reads of the file, keeping the slots that
// read alike and stable in both; torn says whether some did not.
func parse(a, b []byte, now int64) (Table, bool, error) {
	if len(a) < headerSize {
		return Table{}, false, fmt.Errorf("sdmq table: %d bytes, shorter than its header", len(a))
	}
	le := binary.LittleEndian
	switch {
	case le.Uint32(a) == 0:
		return Table{}, false, ErrNotYet
	case le.Uint32(a) != magic:
		return Table{}, false, fmt.Errorf("sdmq table: magic %#x, want %#x", le.Uint32(a), magic)
	case le.Uint32(a[4:]) != version:
		return Table{}, false, fmt.Errorf("sdmq table: version %d, this sdm reads %d", le.Uint32(a[4:]), version)
	}
	slots, size := int(le.Uint32(a[8:])), int(le.Uint32(a[12:]))
	if slots > maxSlots || size < slotSize || size > 4096 || headerSize+slots*size > len(a) {
		return Table{}, false, fmt.Errorf("sdmq table: %d slots of %d bytes in %d bytes", slots, size, len(a))
	}
	t := Table{Rank: int(int32(le.Uint32(a[16:]))), Size: int(int32(le.Uint32(a[20:]))), Pid: int(int32(le.Uint32(a[24:])))}
	torn := false
	for i := range slots {
		off := headerSize + i*size
		s := a[off : off+size]
		if len(b) < off+size || !bytes.Equal(s, b[off:off+size]) || le.Uint32(s)%2 == 1 {
			torn = true
			continue
		}
		if le.Uint32(s[4:]) == 0 || le.Uint16(s[8:]) == 0 {
			continue
		}
		i32 := func(at int) int { return int(int32(le.Uint32(s[at:]))) }
		op := Op{Kind: Kind(le.Uint16(s[8:])), Peer: i32(12), Tag: i32(16), CommSize: i32(20), Comm: le.Uint32(s[24:]),
			Count: i32(28), Root: i32(32), Thread: int(le.Uint32(s[36:])), Bytes: int64(le.Uint64(s[40:])),
			Request: le.Uint64(s[48:]), Caller: le.Uint64(s[64:])}
		if start := int64(le.Uint64(s[56:])); now > start {
			op.Waiting = time.Duration(now - start)
		}
		t.Ops = append(t.Ops, op)
	}
	return t, torn, nil
}

// monotonic is CLOCK_MONOTONIC in ns, the library's clock.
func monotonic() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
