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
//	        CLOCK_MONOTONIC at MPI_Init); comms, pool (u32)
//	slot:   seq, busy (u32); kind, flags (u16); peer, tag, comm_size (i32);
//	        comm (u32); count, root (i32); tid (u32); bytes (i64); request
//	        (u64); start (i64, ns of CLOCK_MONOTONIC); caller (u64)
//	comm:   seq, id, size, first (u32): a communicator the rank used
//	        (id 0 is MPI_COMM_WORLD, never listed), its members' world
//	        ranks at pool[first:first+size]
//	pool:   i32s
//
// A slot is one operation while busy is 1 and kind is not 0; the library
// makes seq odd while it writes a slot or a communicator.
//
// # Where the operations come from
//
// sdm debug (unless --queues=false) and the editor's launch (unless
// "queues": false) set launcher.Options.Queues; wire.Start.Queues then
// names the MPI the program links (launcher.Queues, from its DT_NEEDED
// entries); the backend that starts the program (lazy or gdb) preloads
// that MPI's library from beside its own executable (Preload), so each
// host uses its own copy and a host without one starts the program as it
// is. The library is built per MPI by make build (libsdmq-openmpi.so,
// libsdmq-mpich.so) against the MPI's headers, not linked with it: gdb
// starts a program through a shell, which loads it too, and must not load
// MPI (Open MPI's predefined objects, which its handles point to, are weak
// references there).
//
// Its wrappers (PMPI) are frames of their own under the MPI calls, which
// stacks and backtraces leave out (Unwrap; a backtrace keeps gdb's level
// numbers, which frame N takes) and up and down pass over; a finish whose
// caller is a wrapper finishes out of the wrapper (its frame selected
// first). A breakpoint on a wrapped MPI routine stops once, in the wrapper
// (package backend/gdbmi says how).
//
// # The table
//
// At MPI_Init the library maps /tmp/sdmq-UID/PID (the directory made 0700
// and used only if it is the user's and no one else's; SDMQ_DIR for
// tests), removed as the process exits, and those of processes that are
// gone (killed) swept at the next rank's start. Each call takes a slot
// (compare-and-swap on busy), writes it under a sequence number made odd
// meanwhile, calls PMPI_X, and frees it; a nonblocking call's slot waits
// for its request to complete in a wait or test.
//
// What it records: the blocking point-to-point calls and collectives, the
// nonblocking ones (MPI_Isend, MPI_Issend, MPI_Irecv, the nonblocking
// collectives) and the waits and tests that complete them, persistent
// requests (MPI_Send_init, MPI_Recv_init) from each MPI_Start to their
// completion, and, where the MPI is MPI-4 (MPICH 4), MPI_Isendrecv and the
// large-count entry points (MPI_Send_c, …, recorded as the routine they
// are of). Peers and roots are world ranks: a communicator's translation
// is learnt once, at its first use, and its members published in the file
// for the reader. The reader takes a slot that reads alike twice, even
// (Read). A blocking call costs the program one call level, a dozen stores
// between two of its slot's sequence number, and a read of the coarse
// clock (the thread's slot and variables at fixed offsets from the thread
// pointer): figures in docs/PERFORMANCE.md (BenchmarkInterposition).
//
// # The queues op
//
// queues (wire.OpQueues) is answered by the backends from the file (Of),
// without stopping the rank or starting gdb; the lazy backend names each
// operation's caller (wire.MPIOp.At, from its return address through the
// sampler's modules, stackwalk.Sampler.Places; under --gdb eager the place
// is left out). A rank without a table (attached to, or launched with
// --queues=false) that maps Open MPI's libmpi has its queues read through
// Open MPI's own message-queue library (dll.go); otherwise it is told why
// from the libraries it maps: no MPI, not started yet, or an MPI without
// such a library (Debian's MPICH) or whose library cannot be read (why.go).
//
// Each node of the tree merges its subtree's answers (op.QueueClasses):
// ranks whose operations differ only in peers, waits, threads and callers'
// addresses (not the places of the calls) become one answer, each
// operation's peers as runs of consecutive ranks whose peers step evenly
// round the world (wire.PeerRun: a ring, or all from rank 0, is one run),
// its wait as the shortest and longest; the front end unfolds them per
// rank (wire.Queues.Of). The console prints them, and its deadlock command
// reads them (package console).
package mpiq

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/wire"
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
	Gatherv
	Scatterv
	Allgatherv
	Alltoallv
	ReduceScatter
	ReduceScatterBlock
	Scan
	Exscan
	SendrecvReplace
	Mprobe
	Mrecv
	CommSplit
	CommDup
	Issend
	Ibarrier
	Ibcast
	Ireduce
	Iallreduce
	Igather
	Iscatter
	Iallgather
	Ialltoall
	SendInit
	RecvInit
	Isendrecv
	IsendrecvReplace
)

var kindNames = [...]string{"", "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Recv", "MPI_Sendrecv", "MPI_Probe",
	"MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Barrier", "MPI_Bcast",
	"MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall", "MPI_Finalize",
	"MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv", "MPI_Alltoallv", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
	"MPI_Scan", "MPI_Exscan", "MPI_Sendrecv_replace", "MPI_Mprobe", "MPI_Mrecv", "MPI_Comm_split", "MPI_Comm_dup",
	"MPI_Issend", "MPI_Ibarrier", "MPI_Ibcast", "MPI_Ireduce", "MPI_Iallreduce", "MPI_Igather", "MPI_Iscatter",
	"MPI_Iallgather", "MPI_Ialltoall", "MPI_Send_init", "MPI_Recv_init", "MPI_Isendrecv", "MPI_Isendrecv_replace"}

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

// Table is a rank's operations in flight, and the world ranks of the
// communicators it used, by their number (Op.Comm).
type Table struct {
	Rank, Size, Pid int
	Ops             []Op
	Comms           map[uint32][]int
}

const (
	magic      = 0x514d4453
	version    = 1
	headerSize = 64
	slotSize   = 80
	commSize   = 16
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
	if len(a) == 0 {
		// Made, not yet sized: the library creates the file, then sets
		// its length.
		return Table{}, false, ErrNotYet
	}
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
	comms, pool := int(le.Uint32(a[40:])), int(le.Uint32(a[44:]))
	at := headerSize + slots*size
	if comms > maxSlots || pool > 1<<24 || at+comms*commSize+4*pool > len(a) {
		return t, torn, nil // no communicators kept
	}
	pooled := a[at+comms*commSize:]
	for i := range comms {
		e := a[at+i*commSize : at+(i+1)*commSize]
		if len(b) < at+(i+1)*commSize || !bytes.Equal(e, b[at+i*commSize:at+(i+1)*commSize]) || le.Uint32(e)%2 == 1 {
			torn = true
			continue
		}
		id, n, first := le.Uint32(e[4:]), int(le.Uint32(e[8:])), int(le.Uint32(e[12:]))
		if id == 0 || n == 0 || first+n > pool {
			continue
		}
		ranks := make([]int, n)
		for k := range ranks {
			ranks[k] = int(int32(le.Uint32(pooled[4*(first+k):])))
		}
		if t.Comms == nil {
			t.Comms = map[uint32][]int{}
		}
		t.Comms[id] = ranks
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

// Dir is where the library keeps the tables of a user's ranks on a host:
// SDMQ_DIR, or /tmp/sdmq-UID, a directory of the user's alone (lib/sdmq.c
// makes it, and uses it only so).
func Dir() string {
	if d := os.Getenv("SDMQ_DIR"); d != "" {
		return d
	}
	return fmt.Sprintf("/tmp/sdmq-%d", os.Getuid())
}

// ErrNoTable is a rank with no table: its program has not called
// MPI_Init, links no MPI, or runs without the library. Of says which.
var ErrNoTable = errors.New("no MPI operations recorded")

// Of is the queues of process pid, rank rank, as the wire gives them:
// its table, or, without one, what its MPI's message-queue library reads
// (noTable).
func Of(ctx context.Context, pid, rank int) (wire.Queues, error) {
	if pid <= 0 {
		return wire.Queues{}, errors.New("the rank has no process")
	}
	t, err := Read(filepath.Join(Dir(), strconv.Itoa(pid)))
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrNotYet):
		return noTable(ctx, pid, rank)
	case err != nil:
		return wire.Queues{}, err
	case t.Pid != pid: // a table of an earlier process of that number
		return noTable(ctx, pid, rank)
	}
	return t.Wire(), nil
}

// Wire is the table as the wire gives it, oldest operation first.
func (t Table) Wire() wire.Queues {
	q := wire.Queues{Rank: t.Rank, Size: t.Size, Ops: make([]wire.MPIOp, len(t.Ops))}
	for id, ranks := range t.Comms {
		var b wire.Builder
		for _, r := range ranks {
			if r >= 0 {
				b.Add(r)
			}
		}
		if q.Comms == nil {
			q.Comms = map[int]wire.RankSet{}
		}
		q.Comms[int(id)] = b.Set()
	}
	for i, o := range t.Ops {
		q.Ops[i] = wire.MPIOp{Call: o.Kind.String(), Peer: o.Peer, Tag: o.Tag, Comm: int(o.Comm), CommSize: o.CommSize,
			Count: o.Count, Bytes: o.Bytes, Root: o.Root, Thread: o.Thread, Request: o.Request != 0, Waiting: o.Waiting, Least: o.Waiting,
			Caller: o.Caller}
	}
	slices.SortStableFunc(q.Ops, func(a, b wire.MPIOp) int { return int(b.Waiting - a.Waiting) })
	return q
}

// Wrapper says whether a frame's library (wire.Frame.From) is the
// interposition library: its wrappers are a frame of their own between
// the program's MPI call and the MPI's, which stacks and backtraces leave
// out (Unwrap).
func Wrapper(from string) bool {
	return strings.HasPrefix(filepath.Base(from), "libsdmq-")
}

// Unwrap leaves the interposition library's frames out of a stack,
// innermost first, but for the innermost: a thread stopped in a wrapper
// is there.
func Unwrap(frames []wire.Frame) []wire.Frame {
	if !slices.ContainsFunc(frames, func(f wire.Frame) bool { return Wrapper(f.From) }) {
		return frames
	}
	out := make([]wire.Frame, 0, len(frames))
	for i, f := range frames {
		if i == 0 || !Wrapper(f.From) {
			out = append(out, f)
		}
	}
	return out
}

// Library is the interposition library for an MPI ("openmpi", "mpich"),
// beside the running executable (sdm's binaries), or "" where there is
// none.
func Library(mpi string) string {
	if mpi != "openmpi" && mpi != "mpich" {
		return ""
	}
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	lib := filepath.Join(filepath.Dir(self), "libsdmq-"+mpi+".so")
	if _, err := os.Stat(lib); err != nil {
		return ""
	}
	return lib
}

// Env is what a rank's environment gets for the library of an MPI to
// record its operations: the library preloaded before those the
// environment preloads already (preload, LD_PRELOAD's value); none where
// this host has no library for that MPI.
func Env(mpi, preload string) []string {
	lib := Library(mpi)
	if lib == "" {
		return nil
	}
	if preload != "" {
		lib += ":" + preload
	}
	return []string{"LD_PRELOAD=" + lib}
}

// Preload is st with the library of st.Queues preloaded into the program
// (Env), st.Queues then cleared, so that a start passed on (from a lazy
// backend to gdb's) preloads it once.
func Preload(st wire.Start) wire.Start {
	if st.Queues == "" {
		return st
	}
	preload := os.Getenv("LD_PRELOAD")
	for _, kv := range st.Env {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			preload = v
		}
	}
	st.Env = append(slices.Clip(st.Env), Env(st.Queues, preload)...)
	st.Queues = ""
	return st
}
