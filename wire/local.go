package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// localConn carries a link's bytes between two processes of one host over
// a Unix socket, as they are: the kernel vouched for the peer when the
// link opened (its user is ours), and the bytes never leave the host, so
// there is nothing to encrypt or authenticate on the way. It notes when
// bytes last arrived, for the link's liveness.
type localConn struct {
	net.Conn
	heard atomic.Int64
}

func (c *localConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.heard.Store(int64(clock()))
	}
	return n, err
}

// Err is nil: nothing on a Unix socket can alter the bytes.
func (c *localConn) Err() error { return nil }

// NewLocalLink opens a link over conn, a Unix socket to a process of this
// host, without the handshake: the peer's credentials, which the kernel
// gives (SO_PEERCRED), must be this process's user, else the link is
// refused with an error wrapping ErrAuth. It costs one system call where
// NewLink costs a key exchange, and its records no encryption.
//
// A local link pings on demand only (Link.Expect, Link.Ping): a peer that
// exits or is killed closes the socket, which is noticed at once, and no
// host can vanish between the two ends; what is left to find out, a peer
// that is stopped or stuck, matters only while an answer is awaited from
// it. An idle link then wakes neither process. On error conn is closed.
func NewLocalLink(conn net.Conn, initiator bool, cfg LinkConfig) (*Link, error) {
	if err := checkPeer(conn); err != nil {
		conn.Close()
		return nil, err
	}
	c := &localConn{Conn: conn}
	c.heard.Store(int64(clock()))
	return newLink(c, &c.heard, initiator, cfg, true)
}

// checkPeer says why conn's peer may not be linked to: it is no Unix
// socket, or its process runs as another user.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("%w: a local link needs a Unix socket, not %T", ErrAuth, conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("%w: the peer's credentials: %v", ErrAuth, cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("%w: the local peer (pid %d) runs as uid %d, not %d", ErrAuth, cred.Pid, cred.Uid, os.Getuid())
	}
	return nil
}

// LocalAddress is the Unix socket where server index of the session whose
// key is key takes the servers of its host: a name in the abstract
// namespace, which belongs to the host (to its network namespace, for a
// host emulated as one), leaves no file behind and needs no directory
// shared or not; whoever connects is checked by NewLocalLink. The name
// holds a digest of the key, so sessions never meet, and not the key.
func LocalAddress(key Key, index int) *net.UnixAddr {
	sum := sha256.Sum256(append([]byte("sdm local link "), key[:]...))
	return &net.UnixAddr{Net: "unix", Name: fmt.Sprintf("@sdm-%s-%d", hex.EncodeToString(sum[:8]), index)}
}
