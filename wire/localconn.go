package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// localConn is one stream of a local link: a pipe each way (or one way
// only, for the output stream), its bytes as they are. The kernel vouched
// for the peer when the link opened (its user is ours), and the bytes
// never leave the host, so there is nothing to encrypt or authenticate on
// the way. A read notes when the peer was last heard from, for the link's
// liveness; a write that cannot go out within the link's silence limit
// fails, as yamux's do on other links.
//
// Pipes and not sockets, because of what a read tells the writer: a Unix
// socket signals room to write to its peer at every read, and the Go
// runtime's poller, which watches every descriptor for input and room
// alike, wakes the writing process for it, a wake-up for nothing after
// each message it sent; a pipe signals room only to a writer that found
// it full. A broadcast then wakes each member of a host once, not twice.
type localConn struct {
	r, w          *os.File // nil for the direction a stream does not go
	rr, rw        syscall.RawConn
	local, remote net.Addr
	heard         *atomic.Int64
	limit         time.Duration
	closed        atomic.Bool
}

// newLocalConn makes a stream of the pipe ends r and w, either of which
// may be nil.
func newLocalConn(r, w *os.File, local, remote net.Addr, heard *atomic.Int64, limit time.Duration) (*localConn, error) {
	c := &localConn{r: r, w: w, local: local, remote: remote, heard: heard, limit: limit}
	var err error
	if r != nil {
		c.rr, err = r.SyscallConn()
	}
	if w != nil && err == nil {
		c.rw, err = w.SyscallConn()
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// errOneWay: the output stream goes from the initiator to the responder.
var errOneWay = errors.New("local link: the output stream goes the other way")

// Read and Write make their system calls raw: the pipes are non-blocking,
// and a Go system call made after an idle spell wakes the runtime's
// monitor thread, a second wake-up of the process at every broadcast.
func (c *localConn) Read(p []byte) (int, error) {
	if c.r == nil {
		return 0, errOneWay
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rr.Read(func(fd uintptr) bool {
		n, errno = rawIO(unix.SYS_READ, fd, p)
		return errno != unix.EAGAIN
	})
	switch {
	case c.closed.Load():
		return 0, net.ErrClosed
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	c.heard.Store(int64(clock()))
	return n, nil
}

func (c *localConn) Write(p []byte) (int, error) {
	if c.w == nil {
		return 0, errOneWay
	}
	done := 0
	var errno syscall.Errno
	// Only a write that finds the pipe full waits, and only it sets the
	// deadline of its wait (a deadline is a timer of the runtime's to
	// move, at every write otherwise), and clears it after.
	waited := false
	err := c.rw.Write(func(fd uintptr) bool {
		for errno = 0; done < len(p); {
			var n int
			if n, errno = rawIO(unix.SYS_WRITE, fd, p[done:]); errno != 0 {
				if errno == unix.EAGAIN && !waited {
					waited = true
					c.w.SetWriteDeadline(time.Now().Add(c.limit))
				}
				return errno != unix.EAGAIN
			}
			done += n
		}
		return true
	})
	if waited {
		c.w.SetWriteDeadline(time.Time{})
	}
	switch {
	case c.closed.Load():
		return done, net.ErrClosed
	case err != nil:
		return done, err
	case errno != 0:
		return done, os.NewSyscallError("write", errno)
	}
	return done, nil
}

// rawIO reads or writes (trap) p once, again if a signal interrupted it.
func rawIO(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, errno := unix.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if errno != unix.EINTR {
			return int(n), errno
		}
	}
}

// Close closes both pipes; a read or write waiting on them returns.
func (c *localConn) Close() error {
	c.closed.Store(true)
	var errs []error
	for _, f := range []*os.File{c.r, c.w} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

func (c *localConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *localConn) SetReadDeadline(t time.Time) error {
	if c.r == nil {
		return nil
	}
	return c.r.SetReadDeadline(t)
}

func (c *localConn) SetWriteDeadline(t time.Time) error {
	if c.w == nil {
		return nil
	}
	return c.w.SetWriteDeadline(t)
}

func (c *localConn) LocalAddr() net.Addr  { return c.local }
func (c *localConn) RemoteAddr() net.Addr { return c.remote }

// Err is nil: nothing in a pipe can alter the bytes.
func (c *localConn) Err() error { return nil }
