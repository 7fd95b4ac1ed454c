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
