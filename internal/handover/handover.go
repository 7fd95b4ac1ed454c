// Package handover takes what whoever started a server handed it besides
// its arguments: the session key, taken out of the environment that the
// debugged program inherits (DropKeyFromEnviron); the listening socket
// that the local launcher bound (ListenFDEnv); and the GOMAXPROCS that
// the launcher set for the server, not for the program (GOMAXPROCSEnv).
// The launchers that hand these over and the server that takes them
// share the names here.
//
// What enters: the process's environment and inherited descriptors, a key
// file. What leaves: the session key and the listener, and an environment
// without them.
package handover

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/sdm-hpc/sdm/internal/handover/vars"
	"github.com/sdm-hpc/sdm/wire"
)

// ListenFDEnv names the variable that tells a server which inherited file
// descriptor is its listening socket.
const ListenFDEnv = vars.ListenFD

// GOMAXPROCSEnv marks a GOMAXPROCS that the launcher set for the server
// rather than the user for the program.
const GOMAXPROCSEnv = vars.GOMAXPROCS

// Server is what a server was handed.
type Server struct {
	Key      wire.Key
	Listener net.Listener // nil when none was handed down
}

// Take takes the session key (from keyFile when set), the inherited
// socket, and the launcher's GOMAXPROCS out of the environment. A server
// given its key in the environment is executed again without it first
// (DropKeyFromEnviron), so Take is called before anything else starts.
func Take(keyFile string) (Server, error) {
	if err := DropKeyFromEnviron(); err != nil {
		return Server{}, err
	}
	lookup, err := HandedKey()
	if err != nil {
		return Server{}, err
	}
	key, err := wire.LoadKey(keyFile, lookup)
	if err != nil {
		return Server{}, err
	}
	// The debugged program inherits our environment: the socket and the
	// scheduler setting of the launcher are ours alone.
	if os.Getenv(GOMAXPROCSEnv) != "" {
		os.Unsetenv("GOMAXPROCS")
		os.Unsetenv(GOMAXPROCSEnv)
	}
	ln, err := InheritedListener()
	if err != nil {
		return Server{}, err
	}
	return Server{Key: key, Listener: ln}, nil
}

// InheritedListener returns, in a server, the listening socket the local
// launcher handed down (ListenFDEnv), or nil.
func InheritedListener() (net.Listener, error) {
	text, ok := os.LookupEnv(ListenFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(ListenFDEnv)
	fd, err := strconv.Atoi(text)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not an inherited file descriptor", ListenFDEnv, text)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("%s=%d: %w", ListenFDEnv, fd, err)
	}
	return ln, nil
}
