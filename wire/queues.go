package wire

import "time"

// OpQueues asks for the MPI operations a rank has in flight, as the
// interposition library preloaded into it keeps them (package mpiq): no
// body; the answer is Queues.
const OpQueues = "queues"

// Queues are a rank's MPI operations in flight, oldest first, and the
// world ranks of the communicators it used, by its number for them
// (MPIOp.Comm; MPI_COMM_WORLD, 0, is not listed).
type Queues struct {
	Rank, Size int
	Ops        []MPIOp
	Comms      map[int]RankSet
}

// MPIOp is an MPI operation in flight. Ranks are world ranks.
type MPIOp struct {
	Call     string // the routine: MPI_Recv, MPI_Irecv, MPI_Allreduce, MPI_Waitall, …
	Peer     int    // the source or destination, or one of AnySource, NoRank, UnknownRank, ProcNull
	Tag      int    // AnyTag for MPI_ANY_TAG
	Comm     int    // 0 for MPI_COMM_WORLD, else the rank's own number for the communicator
	CommSize int
	Count    int   // elements, or requests for a wait
	Bytes    int64 // what the elements hold
	Root     int   // a rooted collective's root, or NoRank
	Thread   int
	Request  bool          // a nonblocking operation waiting for its request's completion
	Waiting  time.Duration // since the call
	Caller   uint64        // the return address into the program
}

// Ranks of an MPIOp that are not ranks, and MPI_ANY_TAG.
const (
	AnySource   = -1
	NoRank      = -2
	UnknownRank = -3
	ProcNull    = -4
	AnyTag      = -1
)
