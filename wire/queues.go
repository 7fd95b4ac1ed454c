package wire

import "time"

// OpQueues asks for the MPI operations a rank has in flight, as the
// interposition library preloaded into it keeps them (package mpiq): no
// body; the answer is Queues.
const OpQueues = "queues"

// Queues are a rank's MPI operations in flight, oldest first, and the
// world ranks of the communicators it used, by its number for them
// (MPIOp.Comm; MPI_COMM_WORLD, 0, is not listed). The tree merges the
// queues of ranks that differ only in their peers, waits, threads and
// callers' addresses into one answer (op.QueueClasses): Rank is then the
// group's lowest, each operation tells every rank's peer in Peers, and
// Thread and Caller are the least of the ranks'.
//
// Queues read through the MPI's own message-queue library (a job sdm
// attached to) name that library in Library: their operations are what
// the MPI keeps queued (PostedSend, PostedRecv, Unexpected), not the
// calls the rank is in, and carry no waits or callers.
type Queues struct {
	Rank, Size int
	Ops        []MPIOp
	Comms      map[int]RankSet
	Library    string `msgpack:",omitempty"`
}

// MPIOp.Call of what an MPI's message-queue library tells: a send or a
// receive the MPI holds posted (made by a blocking call or not), and a
// message that arrived before a receive was posted for it (Peer is its
// source).
const (
	PostedSend = "posted send"
	PostedRecv = "posted receive"
	Unexpected = "unexpected message"
)

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
	Waiting  time.Duration // since the call; the longest of the ranks an answer merges
	Least    time.Duration // the shortest wait of the ranks an answer merges
	Caller   uint64        // the return address into the program
	// At is where the program made the call (the caller's function, file
	// and line), where the rank's server could name Caller.
	At Frame
	// Peers, in an answer that merges ranks, gives each rank's peer
	// where Peer holds the lowest rank's.
	Peers []PeerRun
}

// Of is rank's own queues in an answer that merges ranks: its peers,
// and no runs.
func (q Queues) Of(rank int) Queues {
	own := q
	own.Rank = rank
	own.Ops = make([]MPIOp, len(q.Ops))
	for i, o := range q.Ops {
		o.Peer, o.Peers = o.PeerOf(rank, q.Size), nil
		own.Ops[i] = o
	}
	return own
}

// PeerRun tells the peers of Count consecutive ranks from From as an
// arithmetic progression: rank From+i has peer Peer+i*Step, modulo the
// world's size when it is known. A ring of N ranks (each sends to the
// next) is one run, as are N ranks receiving from rank 0.
type PeerRun struct{ From, Count, Peer, Step int }

// PeerOf is rank's peer in an operation of a world of size ranks (0 when
// unknown): from Peers when the answer merges ranks, else Peer.
func (o MPIOp) PeerOf(rank, size int) int {
	for _, r := range o.Peers {
		if rank >= r.From && rank < r.From+r.Count {
			p := r.Peer + (rank-r.From)*r.Step
			if size > 0 {
				p %= size
			}
			return p
		}
	}
	return o.Peer
}

// Ranks of an MPIOp that are not ranks, and MPI_ANY_TAG.
const (
	AnySource   = -1
	NoRank      = -2
	UnknownRank = -3
	ProcNull    = -4
	AnyTag      = -1
)
