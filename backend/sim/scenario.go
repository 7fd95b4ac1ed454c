package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// Scenarios lists the simulated programs and what their ranks look like.
var Scenarios = map[string]string{
	"ring": "every rank in main > ring > MPI_Sendrecv, except rank 0 in main > ring > MPI_Send",
	"deadlock": "every rank in main > ring > MPI_Send to the next, a message too big to be buffered: " +
		"a ring of blocking sends",
	"hang":   "hang [STUCK]: rank STUCK (default the last) spins in compute, the others wait in MPI_Recv",
	"groups": "groups K [DEPTH]: rank r runs work_(r mod K), DEPTH frames deep (default 4)",
}

// Scenario returns the call stack (innermost first) of rank of size in the
// simulated program named program. An empty name means "ring".
func Scenario(program string, args []string, rank, size int) ([]wire.Frame, error) {
	main := wire.Frame{Func: "main", File: program + ".c", Line: 20}
	switch program {
	case "", "ring":
		main.File = "ring.c"
		ring := wire.Frame{Func: "ring", File: "ring.c", Line: 42}
		if rank == 0 {
			return []wire.Frame{{Func: "MPI_Send", File: "send.c", Line: 110}, ring, main}, nil
		}
		return []wire.Frame{{Func: "MPI_Sendrecv", File: "sendrecv.c", Line: 87}, ring, main}, nil
	case "deadlock":
		main.File = "ring.c"
		return []wire.Frame{{Func: "MPI_Send", File: "send.c", Line: 110}, {Func: "ring", File: "ring.c", Line: 42}, main}, nil
	case "hang":
		stuck, err := intArg(program, args, 0, size-1)
		if err != nil {
			return nil, err
		}
		if rank == stuck {
			return []wire.Frame{{Func: "compute", File: "hang.c", Line: 15}, {Func: "main", File: "hang.c", Line: 31}}, nil
		}
		return []wire.Frame{{Func: "MPI_Recv", File: "recv.c", Line: 64}, {Func: "main", File: "hang.c", Line: 35}}, nil
	case "groups":
		k, err := intArg(program, args, 0, 2)
		if err != nil {
			return nil, err
		}
		depth, err := intArg(program, args, 1, 4)
		if err != nil {
			return nil, err
		}
		if k < 1 || depth < 2 || depth > 1000 {
			return nil, fmt.Errorf("sim groups: want K >= 1 and DEPTH in 2..1000, got %d %d", k, depth)
		}
		g := rank % k
		frames := make([]wire.Frame, 0, depth)
		for level := depth - 1; level >= 1; level-- {
			frames = append(frames, wire.Frame{Func: fmt.Sprintf("work_%d_%d", g, level), File: "groups.c", Line: 100*g + level})
		}
		return append(frames, wire.Frame{Func: "main", File: "groups.c", Line: 9}), nil
	}
	return nil, fmt.Errorf("sim: no simulated program %q (have ring, deadlock, hang, groups)", program)
}

// ScenarioQueues are the MPI operations in flight of rank of size in the
// simulated program, which Scenario has accepted, as the interposition
// library would record them (package mpiq); waited is how long the
// program has run.
func ScenarioQueues(program string, args []string, rank, size int, waited time.Duration) wire.Queues {
	q := wire.Queues{Rank: rank, Size: size}
	op := wire.MPIOp{Call: "MPI_Send", Peer: (rank + 1) % size, CommSize: size, Count: 1 << 20, Bytes: 8 << 20,
		Root: wire.NoRank, Waiting: waited, Least: waited}
	switch program {
	case "", "ring":
		if rank != 0 {
			op.Call, op.Peer = "MPI_Sendrecv", (rank+size-1)%size
		}
	case "deadlock":
	case "hang":
		stuck, _ := intArg(program, args, 0, size-1)
		if rank == stuck {
			return q
		}
		op.Call, op.Peer, op.Count, op.Bytes = "MPI_Recv", stuck, 1, 8
	default:
		return q
	}
	q.Ops = []wire.MPIOp{op}
	return q
}

func intArg(program string, args []string, i, def int) (int, error) {
	if i >= len(args) {
		return def, nil
	}
	n, err := strconv.Atoi(args[i])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("sim %s: argument %d: %q is not a non-negative number", program, i+1, args[i])
	}
	return n, nil
}
