package mpiq

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// without is what a rank without a table lacks.
const without = "the rank runs without sdm's queue library (sdm debug preloads it into the ranks it launches unless --queues=false; " +
	"a job sdm attached to has none); "

// noTable is the queues of process pid (rank rank) that has no table:
// read through its MPI's own message-queue library where it maps Open
// MPI's libmpi without the interposition library, else ErrNoTable saying
// why from the libraries it maps: it links no MPI the library knows, has
// not called MPI_Init yet, or its MPI's message-queue library cannot be
// read (deadlock then reads the stacks alone).
func noTable(ctx context.Context, pid, rank int) (wire.Queues, error) {
	mpi, preloaded := mapped(pid)
	switch base := filepath.Base(mpi); {
	case mpi == "":
		return wire.Queues{}, fmt.Errorf("%w: the process maps no MPI library sdm knows (Open MPI's libmpi, MPICH's libmpich)", ErrNoTable)
	case preloaded:
		return wire.Queues{}, fmt.Errorf("%w: the program has not called MPI_Init yet", ErrNoTable)
	case strings.HasPrefix(base, "libmpich"):
		return wire.Queues{}, fmt.Errorf("%w: %sMPICH as Debian builds it has no message-queue library of its own: deadlock reads the stacks alone",
			ErrNoTable, without)
	}
	q, err := fromLibrary(ctx, pid, rank, mpi)
	if err != nil {
		return wire.Queues{}, fmt.Errorf("%w: %sits MPI's message-queue library could not be read: %v: deadlock reads the stacks alone",
			ErrNoTable, without, err)
	}
	return q, nil
}

// mapped is the MPI library process pid maps, and whether it maps the
// interposition library too.
func mapped(pid int) (mpi string, preloaded bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return "", false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 {
			continue
		}
		path := fields[5]
		switch base := filepath.Base(path); {
		case Wrapper(path):
			preloaded = true
		case strings.HasPrefix(base, "libmpi.so") || strings.HasPrefix(base, "libmpich.so"):
			mpi = path
		}
	}
	return mpi, preloaded
}
