package mpiq

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sdm-hpc/sdm/stackwalk"
)

// why says why process pid has no table, from the libraries it maps: it
// links no MPI the library knows, runs without the library (attached to,
// or launched without it), or has not called MPI_Init yet. Without the
// library, what the MPI's own message-queue support could give is said
// too, since deadlock then reads the stacks alone.
func why(pid int) string {
	mpi, preloaded := mapped(pid)
	switch {
	case mpi == "":
		return "the process maps no MPI library sdm knows (Open MPI's libmpi, MPICH's libmpich)"
	case preloaded:
		return "the program has not called MPI_Init yet"
	}
	const without = "the rank runs without sdm's queue library (sdm debug preloads it into the ranks it launches unless --queues=false; " +
		"a job sdm attached to has none); "
	switch base := filepath.Base(mpi); {
	case strings.HasPrefix(base, "libmpich"):
		return without + "MPICH as Debian builds it has no message-queue library of its own: deadlock reads the stacks alone"
	case stackwalk.HasDebugInfo(mpi):
		return without + base + " has the type information Open MPI's message-queue library (libompi_dbg_msgq.so) needs, " +
			"which sdm does not use yet: deadlock reads the stacks alone"
	default:
		return without + "Open MPI's message-queue library (libompi_dbg_msgq.so) needs the type information of " + mpi +
			", which it lacks (no debugging information, no separate debug file): deadlock reads the stacks alone"
	}
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
