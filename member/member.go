// Package member is a member's side of a host's hand-over: the servers
// of a host other than its first (its leader) hand their ranks to the
// leader, which serves them; each member then only starts its rank's
// debugger when the leader asks, so that the debugger and the program it
// starts are the member's children, with the environment, descriptors,
// binding and limits the rank's launcher gave the member.
//
// A member connects to the leader's Unix socket (Address), a
// SOCK_SEQPACKET one, says which server it is (Join), and answers the
// leader's requests (Leader.Serve, Spawner). The connection lives as
// long as both ends: either one's end is the other's news. Both ends
// check that the peer runs as this user (SO_PEERCRED). The leader's side
// is package wire's (wire.AcceptMember).
//
// The package links no network stack, flags or codecs, only system calls
// on the socket: a member is all that most of a node's hundreds of rank
// processes run, and cmd/sdm-rank, built on this package alone, starts
// one at the cost of a Go program that does next to nothing.
//
// # The hand-over
//
// Whether a job's servers hand their ranks over is decided once, in the
// launcher's plan (routing.Hands; by default in a tree of hosts without a
// layout), which gives every server the outcome as --members=hand or
// --members=serve. With --members=hand a member does not serve its rank:
// once it has joined, the leader debugs the rank from its own node
// (sdm.Config.Adopt). Its rank set is the host's, a command for the
// host's ranks reaches one process and wakes no member, and the answers
// merge there.
//
// A rank's gdb is still its own server's child: whenever the leader's
// backend needs one (at the first start, and again after gdb died), it
// asks the member (wire.Member.Spawn), which starts gdb as GDB says and
// passes the leader gdb's standard input, output and error and its pidfd
// (SCM_RIGHTS); the leader drives it (gdbmi.NewSpawned, gdbmi.Adopt),
// signals it and sees it end through the pidfd, and learns how it ended
// from the member, which reaps it. So gdb, and the program gdb starts,
// have what the launcher gave that rank's server: its environment (the
// rank's MPI variables), inherited descriptors (PMI_FD), CPU binding,
// cgroup and limits; the program's terminal is the leader's, which gdb
// names to the program by path.
//
// The member only waits then: for the leader's next request, its end of
// the session (it exits 0), or its loss (an error; it ends its gdbs,
// SIGTERM then SIGKILL, as on a signal). A member that ends is its rank
// lost; a stopped member holds nothing up.
//
// Under --gdb lazy the leader's lazy backend of a member's rank starts the
// program itself (lazy.Origin), as the member would: with the member's
// environment (/proc/PID/environ, less what servers keep to themselves),
// the descriptors the member holds without close-on-exec (copied with
// pidfd_getfd, inherit.Files) at their numbers, and the
// member's processors. The program is then the leader's child, which
// samples it (an ancestor, as Yama's ptrace_scope 1 wants), and its gdb,
// at the hand-over, one of the host's shared gdbs (or, with
// --ranks-per-gdb 1, a gdb the member starts). The leader then samples all
// its host's ranks with one module cache, and takes every processor for
// it (a launcher's GOMAXPROCS=1 is for a server of one rank).
//
// A member that hands its rank over needs nothing else of the server:
// launchers start sdm-rank for the job's servers when they do, a build of
// the member alone (packages member, secret and routing, system calls on
// the socket, signals watched only once it started a gdb) that starts at
// about the cost of a Go program that does nothing. It reads the flags,
// the routing file and its index as sdm-server would, and the start of
// any server that is not a member (the host's first, or anything it does
// not read) it leaves to sdm-server, which it executes in its place with
// the same arguments and environment.
//
// The link between a member and its leader is a local link
// (wire.NewLocalLink): no handshake and no encryption, three pipes passed
// over the socket.
package member

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Each message is one packet: a tag byte, then its fields.
const (
	TagJoin    = 'M' // member: uvarint index, uvarint servers
	TagAdmit   = 'A' // leader: the member's rank is the leader's now
	TagRefuse  = 'R' // leader: why not, as text; then it hangs up
	TagSpawn   = 'S' // leader: start a debugger
	TagSpawned = 's' // member: uvarint pid; its stdin, stdout, stderr and pidfd passed
	TagFailed  = 'F' // member: why the debugger did not start, as text
	TagQuit    = 'Q' // leader: the session is over; then it hangs up
	TagEnded   = 'x' // member: a debugger it spawned ended: uvarint pid, uvarint wait status
)

// MaxPacket bounds a packet of the protocol: a tag and an error's text.
const MaxPacket = 4096

// Address is the abstract Unix socket name on which server index of the
// session whose key is key listens for the servers of its host: a name
// no one without the key can foresee, so that sessions never meet.
func Address(key [32]byte, index int) string {
	sum := sha256.Sum256(append([]byte("sdm local link "), key[:]...))
	return "@sdm-" + hex.EncodeToString(sum[:8]) + "-" + strconv.Itoa(index)
}

// Spawned is a debugger a member started for its leader: the leader's
// ends of its standard input, output and error, and its pidfd, which
// signals it and tells when it ended, whoever its parent is.
type Spawned struct {
	Stdin, Stdout, Stderr *os.File
	Pidfd                 *os.File
	Pid                   int
	// Wait, at the member, waits until the debugger has ended and been
	// reaped, and returns its wait status, which the leader is told.
	Wait func() unix.WaitStatus
	// Ended, at the leader, gives that status: the pidfd tells that the
	// debugger ended, but only its parent learns how. It is closed
	// without one when the member goes first.
	Ended <-chan unix.WaitStatus
}

// Close closes the files.
func (s Spawned) Close() {
	for _, f := range []*os.File{s.Stdin, s.Stdout, s.Stderr, s.Pidfd} {
		if f != nil {
			f.Close()
		}
	}
}

// ErrLeaderGone says that a member's leader hung up without ending the
// session: it was killed, or it failed.
var ErrLeaderGone = errors.New("it hung up without ending the session")

// ErrRefused says that the leader did not take the member's rank, or is
// not one of this user's processes.
var ErrRefused = errors.New("refused by this host's leader")

// ErrProtocol says that the leader sent what the protocol does not
// have.
var ErrProtocol = errors.New("the leader does not speak the member protocol")

// Rights returns every descriptor that the control messages in oob
// passed (SCM_RIGHTS), however many messages carry them, so that a
// reader that expects fewer can close them all.
func Rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		more, _ := unix.ParseUnixRights(&msgs[i])
		fds = append(fds, more...)
	}
	return fds
}

// AppendUvarints appends a tag and its fields.
func AppendUvarints(tag byte, fields ...uint64) []byte {
	p := []byte{tag}
	for _, f := range fields {
		p = binary.AppendUvarint(p, f)
	}
	return p
}

// TwoUvarints reads the two fields of a join or an end: p holds them
// and nothing else.
func TwoUvarints(p []byte) (a, b uint64, ok bool) {
	a, n := binary.Uvarint(p)
	if n > 0 {
		var m int
		if b, m = binary.Uvarint(p[n:]); m > 0 && n+m == len(p) {
			return a, b, true
		}
	}
	return 0, 0, false
}
