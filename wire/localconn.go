package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// localConn is one of a local link's two sockets, its bytes as they
// are: the kernel vouched for the peer when the link opened (its user is
// ours), and the bytes never leave the host, so there is nothing to
// encrypt or authenticate on the way. A read notes when the peer was last
// heard from, for the link's liveness; a write that cannot go out within
// the link's silence limit fails, as yamux's do on other links.
//
// A broadcast wakes every member of a host once, and what else wakes
// one is paid a thousand times. So the socket stays out of the runtime's
// poller, which would watch it for room to write too: the kernel signals
// room each time the peer reads, and the process would wake again for
// every answer it sent. An epoll instance of its own watches the socket
// for input alone, and the runtime's poller watches that instance. Reads
// and writes are raw system calls on the non-blocking socket, as a Go
// system call made after an idle spell wakes the runtime's monitor thread
// too. A write that finds no room waits on a second epoll instance, which
// watches the socket for room only while it waits.
type localConn struct {
	sock, input       *os.File // the socket; the epoll instance watching it
	sockRaw, inputRaw syscall.RawConn
	local, remote     net.Addr
	heard             *atomic.Int64
	limit             time.Duration
	closed            atomic.Bool

	// room is the epoll instance a write waits on for room, made at the
	// first wait: most links never wait.
	mu      sync.Mutex // guards room against Close
	room    *os.File
	roomRaw syscall.RawConn
}

// newLocalConn takes fd, a socket in blocking mode that no poller
// watches. On error fd is closed.
func newLocalConn(fd int, local, remote net.Addr, heard *atomic.Int64, limit time.Duration) (*localConn, error) {
	c := &localConn{local: local, remote: remote, heard: heard, limit: limit}
	// os.NewFile leaves a blocking descriptor out of the runtime's poller
	// and puts a non-blocking one in: the socket is made non-blocking only
	// once it is a file.
	c.sock = os.NewFile(uintptr(fd), "sdm local link")
	err := unix.SetNonblock(fd, true)
	if err == nil {
		c.sockRaw, err = c.sock.SyscallConn()
	}
	if err == nil {
		c.input, c.inputRaw, err = newWatcher("sdm local link input")
	}
	if err == nil {
		err = c.watch(c.inputRaw, unix.EPOLL_CTL_ADD, unix.EPOLLIN|unix.EPOLLRDHUP)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("local link: watching the socket: %w", err)
	}
	return c, nil
}

// newWatcher makes an epoll instance that the runtime's poller watches.
func newWatcher(name string) (*os.File, syscall.RawConn, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(ep), name)
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, raw, nil
}

// watch adds the socket to the epoll instance ep for events, or takes
// it out (op).
func (c *localConn) watch(ep syscall.RawConn, op int, events uint32) error {
	var werr error
	err := ep.Control(func(epfd uintptr) {
		err := c.sockRaw.Control(func(fd uintptr) {
			werr = unix.EpollCtl(int(epfd), op, int(fd), &unix.EpollEvent{Events: events, Fd: int32(fd)})
		})
		if err != nil {
			werr = err
		}
	})
	return errors.Join(err, werr)
}

// takeConn moves uc's socket out of the runtime's poller into a
// localConn. uc is closed whatever happens.
func takeConn(uc *net.UnixConn, heard *atomic.Int64, limit time.Duration) (*localConn, error) {
	local, remote := uc.LocalAddr(), uc.RemoteAddr()
	raw, err := uc.SyscallConn()
	if err != nil {
		uc.Close()
		return nil, err
	}
	fd := -1
	cerr := raw.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	uc.Close()
	if cerr != nil || err != nil {
		return nil, fmt.Errorf("local link: taking the socket: %v", errors.Join(cerr, err))
	}
	// The copy shares the file status flags: blocking, so that it stays
	// out of the poller (newLocalConn).
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("local link: taking the socket: %w", err)
	}
	return newLocalConn(fd, local, remote, heard, limit)
}

func (c *localConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.inputRaw.Read(func(uintptr) bool {
		if err := c.sockRaw.Read(func(fd uintptr) bool {
			n, errno = rawIO(unix.SYS_READ, fd, p)
			return true
		}); err != nil {
			errno = unix.EBADF
			return true
		}
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

// Write waits for room in the socket, when it has none, until the silence
// limit.
func (c *localConn) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	write := func() bool {
		if err := c.sockRaw.Write(func(fd uintptr) bool {
			for done < len(p) {
				var n int
				if n, errno = rawIO(unix.SYS_WRITE, fd, p[done:]); errno != 0 {
					break
				}
				done += n
			}
			return true
		}); err != nil {
			errno = unix.EBADF
		}
		return errno != unix.EAGAIN
	}
	var err error
	if !write() {
		err = c.waitRoom(write)
	}
	switch {
	case c.closed.Load():
		return done, net.ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return done, fmt.Errorf("local link: the peer read nothing for %v: %w", c.limit, err)
	case err != nil:
		return done, err
	case errno != 0:
		return done, os.NewSyscallError("write", errno)
	}
	return done, nil
}

// waitRoom calls write, which says whether it is done, each time the
// socket has room, until the silence limit. Writes are one at a time
// (the codec's lock), so only one waits here.
func (c *localConn) waitRoom(write func() bool) error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return net.ErrClosed
	}
	if c.room == nil {
		room, raw, err := newWatcher("sdm local link room")
		if err != nil {
			c.mu.Unlock()
			return fmt.Errorf("local link: waiting for room: %w", err)
		}
		c.room, c.roomRaw = room, raw
	}
	room, raw := c.room, c.roomRaw
	c.mu.Unlock()
	if err := c.watch(raw, unix.EPOLL_CTL_ADD, unix.EPOLLOUT); err != nil {
		return fmt.Errorf("local link: waiting for room: %w", err)
	}
	room.SetReadDeadline(time.Now().Add(c.limit))
	err := raw.Read(func(uintptr) bool { return write() })
	room.SetReadDeadline(time.Time{})
	c.watch(raw, unix.EPOLL_CTL_DEL, 0)
	return err
}

// Close closes the socket once no read or write is using it; one that is
// waiting returns.
func (c *localConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.mu.Lock()
	for _, f := range []*os.File{c.input, c.room} {
		if f != nil {
			f.Close()
		}
	}
	c.mu.Unlock()
	return c.sock.Close()
}

func (c *localConn) LocalAddr() net.Addr  { return c.local }
func (c *localConn) RemoteAddr() net.Addr { return c.remote }

// errNoDeadline: a local link times out by closing, not by deadlines.
var errNoDeadline = errors.New("local link: deadlines are not supported")

func (c *localConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *localConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *localConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

// rawIO reads or writes p on fd without telling the runtime, which is
// right only for a descriptor that never blocks.
func rawIO(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, errno := unix.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if errno != unix.EINTR {
			return int(n), errno
		}
	}
}

// Err is nil: nothing on a Unix socket can alter the bytes.
func (c *localConn) Err() error { return nil }
