package wire

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/flynn/noise"
)

// ProtocolVersion is the version of the messages and of the handshake. Peers
// of different versions refuse each other before anything else is read.
// Version 1 was an HMAC challenge that protected nothing after it; in
// version 2 the responder answered a replayed first message.
const ProtocolVersion = 3

// DefaultHandshakeTimeout bounds the whole handshake, so a peer that stalls
// halfway holds a connection for at most this long.
const DefaultHandshakeTimeout = 5 * time.Second

// The preamble both sides send first, in clear: magic and version, so that
// a stray client or a peer of another version is told apart at once.
var magic = [4]byte{'S', 'D', 'M', 0}

const preambleSize = len(magic) + 2

// challengeSize is the size of the responder's challenge: random bytes it
// sends after its preamble, which the initiator's first message is bound
// to (they end the prologue), so that a first message recorded from
// another link is refused before the responder says anything else.
const challengeSize = 16

// Sentinel errors of the handshake, for errors.Is.
var (
	ErrNotSDM  = errors.New("peer does not speak the sdm protocol")
	ErrVersion = errors.New("protocol version mismatch")
	ErrAuth    = errors.New("peer failed authentication (wrong session key, or a link it was not made for)")
)

// The Noise protocol: NNpsk0 with the session key as the pre-shared key.
// Both ends mix the key in before the first message, so a peer without it
// can neither produce nor read a single handshake or transport message;
// the ephemeral Diffie-Hellman gives each link keys of its own, so that a
// recorded link cannot be read later even with the session key. AES-GCM
// and SHA-256 come from the standard library (AES runs in hardware on the
// machines sdm targets).
var cipherSuite = noise.NewCipherSuite(noise.DH25519, noise.CipherAESGCM, noise.HashSHA256)

// LinkKind says what a link connects.
type LinkKind uint8

// Link kinds.
const (
	TreeLink     LinkKind = 1 // a server (or the master) and one of its children
	FrontEndLink LinkKind = 2 // the master and the front end
)

// Ends describes a link as one of its ends sees it. Both ends must describe
// the same link, and the description is bound into the handshake (Noise's
// prologue): a handshake made for one link fails on any other. So a child's
// handshake for parent 3 is refused by parent 5, and a front end's by any
// tree port, whatever relays the bytes.
type Ends struct {
	Kind LinkKind
	// Parent is the upper end's index in the tree (the master's is Size),
	// and Size the job's; tree links only: a front end need not know the
	// size before the master's hello.
	Parent, Size int
	// Upper says that we are the upper end: the parent, or the front end.
	Upper bool
	// Initiator says that we speak first: the end that made the
	// connection, or the master on a pipe (--proxy=stdio).
	Initiator bool
}

// ToParent is a child's end of the link to its parent.
func ToParent(parent, size int) Ends {
	return Ends{Kind: TreeLink, Parent: parent, Size: size, Initiator: true}
}

// FromChild is a parent's end of a link from one of its children.
func FromChild(self, size int) Ends {
	return Ends{Kind: TreeLink, Parent: self, Size: size, Upper: true}
}

// prologue is the link's description, the same at both ends.
func (e Ends) prologue() []byte {
	initiator := "lower"
	if e.Upper == e.Initiator {
		initiator = "upper"
	}
	p := "sdm " + strconv.Itoa(ProtocolVersion) + "\n"
	switch e.Kind {
	case TreeLink:
		p += "tree link to parent " + strconv.Itoa(e.Parent) + " of " + strconv.Itoa(e.Size)
	case FrontEndLink:
		p += "front-end link"
	default:
		p += "link kind " + strconv.Itoa(int(e.Kind))
	}
	return []byte(p + "\ninitiated by the " + initiator + " end\n")
}

// String names the link, for errors.
func (e Ends) String() string {
	if e.Kind == FrontEndLink {
		return "the front-end link"
	}
	return "the tree link to parent " + strconv.Itoa(e.Parent)
}

// handshakeRecordLimit bounds a handshake message; real ones are 48 bytes.
const handshakeRecordLimit = 1024

// Handshake runs the Noise handshake on conn as the end e describes, and
// returns conn wrapped so that every byte after the handshake is encrypted
// and authenticated. Both ends send their preamble (magic, version) at
// once, the responder with a fresh random challenge after it; the
// initiator, once it has both, sends its ephemeral key bound to the
// challenge; the responder checks it and answers with its own ephemeral
// key; the initiator confirms with a first encrypted record, so that both
// ends know the other holds the key before NewLink returns. That is two
// round trips. A responder sends nothing but its preamble and challenge
// before the initiator's first message proved that it holds the key for
// this very link and this very connection: two listeners cannot be played
// against each other, and a first message replayed from an earlier link
// gets nothing more.
func Handshake(conn net.Conn, key Key, e Ends, timeout time.Duration) (*secureConn, error) {
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	defer conn.SetDeadline(time.Time{})
	state := func(challenge []byte) (*noise.HandshakeState, error) {
		return noise.NewHandshakeState(noise.Config{
			CipherSuite: cipherSuite, Pattern: noise.HandshakeNN, Initiator: e.Initiator,
			Prologue: append(e.prologue(), challenge...), PresharedKey: key[:], PresharedKeyPlacement: 0,
		})
	}
	if e.Initiator {
		return initiate(conn, state, e)
	}
	return respond(conn, state, e)
}

func initiate(conn net.Conn, state func([]byte) (*noise.HandshakeState, error), e Ends) (*secureConn, error) {
	// The preamble goes while the responder's is read: on a pipe that
	// holds no bytes (net.Pipe) both ends write at once, and a responder
	// of an earlier version waits for ours before it says its version.
	sent := make(chan error, 1)
	go func() {
		_, err := conn.Write(appendPreamble(nil))
		sent <- err
	}()
	if err := readPreamble(conn); err != nil {
		return nil, err
	}
	challenge := make([]byte, challengeSize)
	if _, err := io.ReadFull(conn, challenge); err != nil {
		return nil, fmt.Errorf("handshake: read challenge: %w", err)
	}
	if err := <-sent; err != nil {
		return nil, fmt.Errorf("handshake: send: %w", err)
	}
	hs, err := state(challenge)
	if err != nil {
		return nil, err
	}
	msg, _, _, err := hs.WriteMessage(nil, nil)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(appendRecord(nil, msg)); err != nil {
		return nil, fmt.Errorf("handshake: send: %w", err)
	}
	if msg, err = readAnswer(conn, e); err != nil {
		return nil, err
	}
	_, toPeer, fromPeer, err := hs.ReadMessage(nil, msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: its answer does not check out", ErrAuth, e)
	}
	sc := newSecureConn(conn, fromPeer, toPeer)
	if err := sc.writeRecords(nil); err != nil { // the confirmation
		return nil, fmt.Errorf("handshake: send: %w", err)
	}
	return sc, nil
}

func respond(conn net.Conn, state func([]byte) (*noise.HandshakeState, error), e Ends) (*secureConn, error) {
	// Whoever connects learns our version and a challenge, nothing that
	// depends on the key.
	challenge := make([]byte, challengeSize)
	if _, err := rand.Read(challenge); err != nil {
		return nil, err
	}
	if _, err := conn.Write(append(appendPreamble(nil), challenge...)); err != nil {
		return nil, fmt.Errorf("handshake: send: %w", err)
	}
	if err := readPreamble(conn); err != nil {
		return nil, err
	}
	hs, err := state(challenge)
	if err != nil {
		return nil, err
	}
	msg, err := readRecord(conn, handshakeRecordLimit)
	if err != nil {
		return nil, fmt.Errorf("handshake: read: %w", err)
	}
	if _, _, _, err := hs.ReadMessage(nil, msg); err != nil {
		// An empty record says that it was refused, where a connection
		// closed without a word (let go under a flood, say) is worth
		// another try.
		conn.Write(appendRecord(nil, nil))
		return nil, fmt.Errorf("%w: %s: its first message does not check out", ErrAuth, e)
	}
	msg, fromPeer, toPeer, err := hs.WriteMessage(nil, nil)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(appendRecord(nil, msg)); err != nil {
		return nil, fmt.Errorf("handshake: send: %w", err)
	}
	sc := newSecureConn(conn, fromPeer, toPeer)
	if _, err := sc.readRecord(); err != nil || len(sc.plain) != 0 {
		return nil, fmt.Errorf("%w: %s: no valid confirmation (%v)", ErrAuth, e, err)
	}
	return sc, nil
}

// appendPreamble appends magic and version.
func appendPreamble(b []byte) []byte {
	b = append(b, magic[:]...)
	return binary.BigEndian.AppendUint16(b, ProtocolVersion)
}

// readPreamble reads and checks the peer's preamble.
func readPreamble(conn net.Conn) error {
	// The magic is read on its own so that a stray client (a port scanner,
	// a browser) is told apart at once instead of at the deadline.
	var theirs [preambleSize]byte
	if _, err := io.ReadFull(conn, theirs[:len(magic)]); err != nil {
		return fmt.Errorf("handshake: read preamble: %w", err)
	}
	if [4]byte(theirs[:4]) != magic {
		return fmt.Errorf("%w: first bytes %q", ErrNotSDM, theirs[:4])
	}
	if _, err := io.ReadFull(conn, theirs[len(magic):]); err != nil {
		return fmt.Errorf("handshake: read preamble: %w", err)
	}
	if v := binary.BigEndian.Uint16(theirs[4:]); v != ProtocolVersion {
		return fmt.Errorf("%w: peer speaks version %d, we speak %d", ErrVersion, v, ProtocolVersion)
	}
	return nil
}

// readAnswer reads the responder's message. An empty record is a
// refusal; a connection closed without one is not (the responder let it
// go to make room, or was going away), and may be tried again.
func readAnswer(conn net.Conn, e Ends) ([]byte, error) {
	msg, err := readRecord(conn, handshakeRecordLimit)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("handshake: the peer closed the connection before it answered: %w", io.ErrUnexpectedEOF)
	case err != nil:
		return nil, fmt.Errorf("handshake: read: %w", err)
	case len(msg) == 0:
		return nil, fmt.Errorf("%w: %s: the peer refused our first message", ErrAuth, e)
	}
	return msg, nil
}

// appendRecord appends msg with its 2-byte length.
func appendRecord(b, msg []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	return append(b, msg...)
}

// readRecord reads one length-prefixed record of at most limit bytes.
func readRecord(r io.Reader, limit int) ([]byte, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n > limit {
		return nil, fmt.Errorf("%w: record of %d bytes, limit %d", ErrAuth, n, limit)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, err
	}
	return msg, nil
}
