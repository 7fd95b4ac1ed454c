package routing

import "fmt"

// Source is how a rank server finds its routing table: the value of its
// --routes_from, which the resource-manager adapter that starts it chooses.
type Source string

// The sources.
const (
	// SourceFile: wait for the routing file that whoever started the
	// servers writes (PTP's way; the default).
	SourceFile Source = "file"
	// SourcePublish: bind any free port, publish it (Publish), and wait
	// for the routing file the front end writes from every entry.
	SourcePublish Source = "publish"
	// SourceSLURM: compute it from SLURM's variables.
	SourceSLURM Source = "slurm"
	// SourcePE: compute it from POE's variables and host list.
	SourcePE Source = "pe"
)

// ParseSource reads a --routes_from value.
func ParseSource(s string) (Source, error) {
	switch src := Source(s); src {
	case SourceFile, SourcePublish, SourceSLURM, SourcePE:
		return src, nil
	}
	return "", fmt.Errorf("--routes_from=%s: want file, publish, slurm or pe", s)
}

// Computed says whether servers compute the table themselves from what
// the resource manager tells them (then they need a port base).
func (s Source) Computed() bool { return s == SourceSLURM || s == SourcePE }
