package routing

import "fmt"

// What the servers of a host do with their ranks (a server's --members).
const (
	// MembersHand: a host's servers hand their ranks to its first
	// server, which debugs them all.
	MembersHand = "hand"
	// MembersServe: each server debugs its own rank.
	MembersServe = "serve"
)

// Hands decides whether a job's servers hand their ranks to the first
// server of their host: as members says (hand when ""), in a tree of
// hosts (not rankTree) whose servers each start with one rank (no
// layout). A job's plan decides it once and gives every server the
// outcome as --members=hand or --members=serve, which the servers, and
// sdm-rank's start before them, take as it is; a server started by hand
// decides it from its own flags.
func Hands(members string, rankTree, layout bool) (bool, error) {
	switch members {
	case MembersHand, "":
		return !rankTree && !layout, nil
	case MembersServe:
		return false, nil
	}
	return false, fmt.Errorf("--members=%s: want %s or %s", members, MembersHand, MembersServe)
}
