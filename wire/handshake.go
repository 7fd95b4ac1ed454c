package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ProtocolVersion is the version of the messages and of the handshake. Peers
// of different versions refuse each other before anything else is read.
const ProtocolVersion = 1

// DefaultHandshakeTimeout bounds the whole handshake, so a peer that stalls
// halfway holds a connection for at most this long.
const DefaultHandshakeTimeout = 5 * time.Second

// The hello both sides send first: magic, version, nonce.
var magic = [4]byte{'S', 'D', 'M', 0}

const (
	nonceSize = 32
	helloSize = len(magic) + 2 + nonceSize
	macSize   = sha256.Size
)

// Sentinel errors of the handshake, for errors.Is.
var (
	ErrNotSDM  = errors.New("peer does not speak the sdm protocol")
	ErrVersion = errors.New("protocol version mismatch")
	ErrAuth    = errors.New("peer failed authentication (wrong session key?)")
)

// Handshake proves to the peer on conn that we hold key and checks that the
// peer does too, before any other byte is trusted. Both sides send a hello
// (magic, version, fresh nonce); the dialer then answers with an HMAC over
// both nonces, and the listener answers with its own only after the
// dialer's checked out, so an impostor learns nothing. The role labels in
// the HMACs keep one side's answer from being replayed as the other's.
func Handshake(conn net.Conn, key Key, dialer bool, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	defer conn.SetDeadline(time.Time{})

	var mine [helloSize]byte
	copy(mine[:], magic[:])
	binary.BigEndian.PutUint16(mine[len(magic):], ProtocolVersion)
	if _, err := rand.Read(mine[len(magic)+2:]); err != nil {
		return err
	}
	if _, err := conn.Write(mine[:]); err != nil {
		return fmt.Errorf("handshake: send hello: %w", err)
	}
	// The magic is read on its own so that a stray client (a port scanner,
	// a browser) is told apart at once instead of at the deadline.
	var theirs [helloSize]byte
	if _, err := io.ReadFull(conn, theirs[:len(magic)]); err != nil {
		return fmt.Errorf("handshake: read hello: %w", err)
	}
	if [4]byte(theirs[:4]) != magic {
		return fmt.Errorf("%w: first bytes %q", ErrNotSDM, theirs[:4])
	}
	if _, err := io.ReadFull(conn, theirs[len(magic):]); err != nil {
		return fmt.Errorf("handshake: read hello: %w", err)
	}
	if v := binary.BigEndian.Uint16(theirs[4:]); v != ProtocolVersion {
		return fmt.Errorf("%w: peer speaks version %d, we speak %d", ErrVersion, v, ProtocolVersion)
	}
	listenerNonce, dialerNonce := mine[len(magic)+2:], theirs[len(magic)+2:]
	if dialer {
		listenerNonce, dialerNonce = dialerNonce, listenerNonce
	}
	dialerMAC := proof(key, "sdm dialer", listenerNonce, dialerNonce)
	listenerMAC := proof(key, "sdm listener", listenerNonce, dialerNonce)
	if dialer {
		if _, err := conn.Write(dialerMAC); err != nil {
			return fmt.Errorf("handshake: send proof: %w", err)
		}
		return expect(conn, listenerMAC)
	}
	if err := expect(conn, dialerMAC); err != nil {
		return err
	}
	if _, err := conn.Write(listenerMAC); err != nil {
		return fmt.Errorf("handshake: send proof: %w", err)
	}
	return nil
}

// proof is HMAC-SHA256(key, role || listener nonce || dialer nonce).
func proof(key Key, role string, listenerNonce, dialerNonce []byte) []byte {
	h := hmac.New(sha256.New, key[:])
	h.Write([]byte(role))
	h.Write(listenerNonce)
	h.Write(dialerNonce)
	return h.Sum(nil)
}

func expect(conn net.Conn, want []byte) error {
	got := make([]byte, macSize)
	if _, err := io.ReadFull(conn, got); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// A listener hangs up on a dialer whose proof was wrong.
			return fmt.Errorf("%w: peer closed the connection", ErrAuth)
		}
		return fmt.Errorf("handshake: read proof: %w", err)
	}
	if !hmac.Equal(got, want) {
		return ErrAuth
	}
	return nil
}
