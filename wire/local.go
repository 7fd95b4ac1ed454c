package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// localConn is one of a local link's two sockets, its bytes as they
// are: the kernel vouched for the peer when the link opened (its user is
// ours), and the bytes never leave the host, so there is nothing to
// encrypt or authenticate on the way. A read notes when the peer was last
// heard from, for the link's liveness; a write that cannot go out within
// the link's silence limit fails, as yamux's do on other links.
type localConn struct {
	net.Conn
	heard *atomic.Int64
	limit time.Duration
}

func (c *localConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.heard.Store(int64(clock()))
	}
	return n, err
}

func (c *localConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.limit))
	return c.Conn.Write(p)
}

// Err is nil: nothing on a Unix socket can alter the bytes.
func (c *localConn) Err() error { return nil }

// NewLocalLink opens a link over conn, a Unix socket to a process of this
// host, without the handshake: the peer's credentials, which the kernel
// gives (SO_PEERCRED), must be this process's user, else the link is
// refused with an error wrapping ErrAuth. It costs one system call where
// NewLink costs a key exchange, and its records no encryption.
//
// Its two streams are two sockets, not a multiplexer's: conn carries the
// control stream, and the initiator passes the responder one end of a
// socket pair of its own making (SCM_RIGHTS) for the output stream. A
// message is then one write and one read, with no session's goroutines
// or window updates between, on either side.
//
// A local link pings on demand only (Link.Expect, Link.Ping): a peer that
// exits or is killed closes the socket, which is noticed at once, and no
// host can vanish between the two ends; what is left to find out, a peer
// that is stopped or stuck, matters only while an answer is awaited from
// it. An idle link then wakes neither process. On error conn is closed.
func NewLocalLink(conn net.Conn, initiator bool, cfg LinkConfig) (*Link, error) {
	uc, err := checkPeer(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	timeout := cfg.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	uc.SetDeadline(time.Now().Add(timeout))
	var out net.Conn
	if initiator {
		out, err = sendOutputSocket(uc)
	} else {
		out, err = takeOutputSocket(uc)
	}
	if err != nil {
		uc.Close()
		return nil, err
	}
	uc.SetDeadline(time.Time{})
	heard := new(atomic.Int64)
	heard.Store(int64(clock()))
	control := &localConn{Conn: uc, heard: heard, limit: cfg.SilenceLimit()}
	output := &localConn{Conn: out, heard: heard, limit: cfg.SilenceLimit()}
	return &Link{
		conn:    control,
		streams: [2]net.Conn{control, output},
		control: NewCodec(control, cfg.MaxFrame),
		output:  NewCodec(output, cfg.MaxFrame),
		done:    make(chan struct{}),
		live:    liveness{heard: heard, interval: cfg.keepAlive(), onDemand: true},
	}, nil
}

// outputTag is the byte that carries the output stream's socket.
const outputTag = 'O'

// sendOutputSocket makes a socket pair, passes one end over uc and
// returns the other.
func sendOutputSocket(uc *net.UnixConn) (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("local link: output socket: %w", err)
	}
	_, _, err = uc.WriteMsgUnix([]byte{outputTag}, unix.UnixRights(fds[1]), nil)
	unix.Close(fds[1])
	if err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("local link: passing the output socket: %w", err)
	}
	return fileConn(fds[0])
}

// takeOutputSocket receives the output stream's socket over uc.
func takeOutputSocket(uc *net.UnixConn) (net.Conn, error) {
	var tag [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(tag[:], oob)
	if err != nil {
		return nil, fmt.Errorf("local link: waiting for the output socket: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		fds, _ = unix.ParseUnixRights(&msgs[0])
	}
	if n != 1 || tag[0] != outputTag || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		if n == 1 && tag[0] == outputTag && flags&unix.MSG_CTRUNC != 0 {
			// The kernel drops what it cannot give: a full descriptor table.
			return nil, fmt.Errorf("local link: the peer's output socket could not be taken: this process has as many files open as it may (ulimit -n)")
		}
		return nil, fmt.Errorf("%w: the local peer did not pass its output socket", ErrNotSDM)
	}
	if !isStreamSocket(fds[0]) {
		unix.Close(fds[0])
		return nil, fmt.Errorf("%w: the local peer passed something else than a Unix stream socket for output", ErrNotSDM)
	}
	return fileConn(fds[0])
}

// isStreamSocket says whether fd is a Unix stream socket.
func isStreamSocket(fd int) bool {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || domain != unix.AF_UNIX {
		return false
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && typ == unix.SOCK_STREAM
}

// fileConn makes a net.Conn of fd, which it takes.
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "sdm local link")
	defer f.Close()
	return net.FileConn(f)
}

// checkPeer returns conn as a Unix socket whose peer runs as this
// process's user, or says why it is not one.
func checkPeer(conn net.Conn) (*net.UnixConn, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("%w: a local link needs a Unix socket, not %T", ErrAuth, conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("%w: the peer's credentials: %v", ErrAuth, cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%w: the local peer (pid %d) runs as uid %d, not %d", ErrAuth, cred.Pid, cred.Uid, os.Getuid())
	}
	return uc, nil
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
