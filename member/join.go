package member

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Dialling a leader that does not listen yet is tried again after
// firstRetry, then twice as long each time, up to maxRetry: the leader
// is a process of the same launch, started about when its members are.
const (
	firstRetry = 2 * time.Millisecond
	maxRetry   = 100 * time.Millisecond
)

// JoinTimeout is how long a member waits for its leader's answer to its
// join, unless told otherwise: as long as a link's handshake may take.
const JoinTimeout = 5 * time.Second

// Leader is a member's end of its connection to its leader.
type Leader struct {
	fd    int
	index int // the leader's server index
	// mu orders the writes (an end told while a spawn is answered) and
	// the close, after which fd may name another file.
	mu     sync.Mutex
	closed bool
}

// Join hands server index's rank, of a job of servers servers, to its
// host's leader, server leader of the session whose key is key: it dials
// the leader's socket until the leader listens or ctx ends, and waits at
// most timeout for the leader to take the rank. A refusal is final.
func Join(ctx context.Context, key [32]byte, leader, index, servers int, timeout time.Duration) (*Leader, error) {
	addr := Address(key, leader)
	start, wait := time.Now(), firstRetry
	for {
		fd, err := dial(addr)
		if err == nil {
			l, err := join(fd, index, servers, timeout)
			if err != nil {
				return nil, fmt.Errorf("server %d, this host's first, refused us: %w", leader, err)
			}
			l.index = leader
			return l, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("could not reach server %d, this host's first, in %v: %w", leader, time.Since(start).Round(time.Millisecond), err)
		case <-t.C:
		}
		wait = min(2*wait, maxRetry)
	}
}

// Joined is the connection fd to server leader, over which this process
// joined before its Go code ran (cmd/sdm-rank's start in C).
func Joined(fd, leader int) *Leader {
	return &Leader{fd: fd, index: leader}
}

// dial connects to the abstract socket addr.
func dial(addr string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: addr}); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("connect", err)
	}
	return fd, nil
}

// join checks that fd's peer runs as this user, says which server this
// is, and waits at most timeout for the answer. On error fd is closed.
func join(fd, index, servers int, timeout time.Duration) (*Leader, error) {
	l := &Leader{fd: fd}
	err := l.checkPeer()
	if err == nil {
		tv := unix.NsecToTimeval(timeout.Nanoseconds())
		err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	if err == nil {
		err = l.write(AppendUvarints(TagJoin, uint64(index), uint64(servers)))
	}
	var p []byte
	if err == nil {
		p, err = l.read()
	}
	switch {
	case errors.Is(err, unix.EAGAIN):
		err = errors.New("no answer within " + timeout.String())
	case err != nil:
	case len(p) > 0 && p[0] == TagRefuse:
		err = fmt.Errorf("%w: %s", ErrRefused, p[1:])
	case len(p) != 1 || p[0] != TagAdmit:
		err = fmt.Errorf("%w: it answered %q", ErrProtocol, p)
	}
	if err == nil {
		var none unix.Timeval
		err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &none)
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// checkPeer checks that the leader runs as this process's user.
func (l *Leader) checkPeer() error {
	cred, err := unix.GetsockoptUcred(l.fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return fmt.Errorf("%w: the peer's credentials: %v", ErrRefused, err)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("%w: the local peer (pid %d) runs as uid %d, not %d", ErrRefused, cred.Pid, cred.Uid, os.Getuid())
	}
	return nil
}

// Serve answers the leader's requests for a debugger with spawn, whose
// Spawned files are closed once passed, until the leader ends the
// session or ctx ends (nil), or the leader hangs up (an error that names
// it and wraps ErrLeaderGone).
func (l *Leader) Serve(ctx context.Context, spawn func() (Spawned, error)) error {
	// A read blocked in the kernel returns at a shutdown, not a close.
	stop := context.AfterFunc(ctx, func() { unix.Shutdown(l.fd, unix.SHUT_RDWR) })
	defer stop()
	defer l.close()
	for {
		p, err := l.read()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("server %d, which this host's ranks were handed to, is gone: %w", l.index, ErrLeaderGone)
		case len(p) == 1 && p[0] == TagQuit:
			return nil
		case len(p) == 1 && p[0] == TagSpawn:
			if err := l.answer(spawn); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: it sent %q", ErrProtocol, p)
		}
	}
}

// answer starts a debugger and passes it on.
func (l *Leader) answer(spawn func() (Spawned, error)) error {
	s, err := spawn()
	if err != nil {
		msg := err.Error()
		if len(msg) > MaxPacket-1 {
			msg = msg[:MaxPacket-1]
		}
		return l.write(append([]byte{TagFailed}, msg...))
	}
	defer s.Close()
	rights := unix.UnixRights(int(s.Stdin.Fd()), int(s.Stdout.Fd()), int(s.Stderr.Fd()), int(s.Pidfd.Fd()))
	l.mu.Lock()
	err = unix.EBADF
	if !l.closed {
		err = unix.Sendmsg(l.fd, AppendUvarints(TagSpawned, uint64(s.Pid)), rights, nil, 0)
	}
	l.mu.Unlock()
	if err == nil && s.Wait != nil {
		go func() {
			status := s.Wait()
			l.write(AppendUvarints(TagEnded, uint64(s.Pid), uint64(status)))
		}()
	}
	if err != nil {
		return os.NewSyscallError("sendmsg", err)
	}
	return nil
}

// read reads one packet. A leader passes no descriptors: any that come
// are closed, and the packet refused.
func (l *Leader) read() ([]byte, error) {
	p := make([]byte, MaxPacket)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, flags, _, err := unix.Recvmsg(l.fd, p, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvmsg", err)
		}
		if oobn > 0 {
			for _, fd := range Rights(oob[:oobn]) {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("%w: it passed descriptors", ErrProtocol)
		}
		if n == 0 {
			return nil, errors.New("hung up") // a seqpacket's end
		}
		if flags&unix.MSG_TRUNC != 0 {
			return nil, fmt.Errorf("%w: a packet too large", ErrProtocol)
		}
		return p[:n], nil
	}
}

// write sends one packet, unless the connection is closed.
func (l *Leader) write(p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return unix.EBADF
	}
	_, err := unix.Write(l.fd, p)
	return err
}

// close closes the connection once.
func (l *Leader) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		unix.Close(l.fd)
	}
}
