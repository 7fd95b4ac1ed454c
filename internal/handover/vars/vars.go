// Package vars names the environment variables that launchers hand a
// server besides its arguments, which package handover takes: a package
// of its own, so that a rank server's lean start (cmd/sdm-rank) can tell
// whether it was handed any without linking what takes them.
package vars

const (
	// ListenFD tells a server which inherited file descriptor is its
	// listening socket.
	ListenFD = "SDM_LISTEN_FD"
	// GOMAXPROCS marks a GOMAXPROCS that the launcher set for the server
	// rather than the user for the program.
	GOMAXPROCS = "SDM_GOMAXPROCS"
	// KeyFD names the descriptor on which a server that executed itself
	// again finds its session key (handover.DropKeyFromEnviron).
	KeyFD = "SDM_SESSION_KEY_FD"
)
