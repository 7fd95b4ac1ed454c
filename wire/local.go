package wire

import (
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/member"
)

// NewLocalLink opens a link over conn, a Unix socket to a process of this
// host, without the handshake: the peer's credentials, which the kernel
// gives (SO_PEERCRED), must be this process's user, else the link is
// refused with an error wrapping ErrAuth. It costs one system call where
// NewLink costs a key exchange, and its records no encryption.
//
// The link runs over pipes, not over conn: the initiator makes three, the
// control stream's two and the output stream's one, which goes from the
// initiator to the responder only, and passes the responder its ends
// over conn (SCM_RIGHTS); conn is closed then. A message is one write
// and one read, with no session's goroutines or window updates between,
// and a peer that exits or is killed closes its ends, which is noticed
// at once.
//
// A local link pings on demand only (Link.Expect, Link.Ping): no host can
// vanish between the two ends; what is left to find out, a peer that is
// stopped or stuck, matters only while an answer is awaited from it. An
// idle link then wakes neither process. On error conn is closed.
func NewLocalLink(conn net.Conn, initiator bool, cfg LinkConfig) (*Link, error) {
	uc, err := checkPeer(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer uc.Close()
	timeout := cfg.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	uc.SetDeadline(time.Now().Add(timeout))
	var ends [3]*os.File
	if initiator {
		ends, err = sendPipes(uc)
	} else {
		ends, err = takePipes(uc)
	}
	if err != nil {
		return nil, err
	}
	heard := new(atomic.Int64)
	heard.Store(int64(clock()))
	limit := cfg.SilenceLimit()
	local, remote := uc.LocalAddr(), uc.RemoteAddr()
	outR, outW := ends[2], (*os.File)(nil)
	if initiator {
		outR, outW = nil, ends[2]
	}
	control, err := newLocalConn(ends[0], ends[1], local, remote, heard, limit)
	if err != nil {
		closeFiles(ends[:])
		return nil, err
	}
	output, err := newLocalConn(outR, outW, local, remote, heard, limit)
	if err != nil {
		control.Close()
		closeFiles(ends[2:])
		return nil, err
	}
	return &Link{
		conn:    control,
		streams: [2]net.Conn{control, output},
		control: NewCodec(control, cfg.MaxFrame),
		output:  NewCodec(output, cfg.MaxFrame),
		done:    make(chan struct{}),
		live:    liveness{heard: heard},
	}, nil
}

// pipesTag is the byte that carries the responder's ends of the pipes.
const pipesTag = 'P'

// sendPipes makes the link's pipes, passes the responder its ends over
// uc and returns the initiator's: the control stream's read and write
// ends, then the output stream's write end.
func sendPipes(uc *net.UnixConn) (ends [3]*os.File, err error) {
	// down carries the control stream to the initiator, up from it, out
	// its output.
	var down, up, out [2]int
	for i, p := range []*[2]int{&down, &up, &out} {
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			for _, q := range []*[2]int{&down, &up, &out}[:i] {
				closeFds(q[:])
			}
			return ends, fmt.Errorf("local link: making its pipes: %w", err)
		}
	}
	mine := [3]int{down[0], up[1], out[1]}
	theirs := [3]int{up[0], down[1], out[0]}
	_, _, err = uc.WriteMsgUnix([]byte{pipesTag}, unix.UnixRights(theirs[:]...), nil)
	closeFds(theirs[:])
	if err != nil {
		closeFds(mine[:])
		return ends, fmt.Errorf("local link: passing its pipes: %w", err)
	}
	return pipeFiles(mine), nil
}

// takePipes receives the responder's ends of the link's pipes over uc:
// the control stream's read and write ends, then the output stream's
// read end.
func takePipes(uc *net.UnixConn) (ends [3]*os.File, err error) {
	var tag [1]byte
	oob := make([]byte, unix.CmsgSpace(4*len(ends)))
	n, oobn, flags, _, err := uc.ReadMsgUnix(tag[:], oob)
	if err != nil {
		return ends, fmt.Errorf("local link: waiting for its pipes: %w", err)
	}
	fds := member.Rights(oob[:oobn])
	if n != 1 || tag[0] != pipesTag || len(fds) != len(ends) {
		closeFds(fds)
		if n == 1 && tag[0] == pipesTag && flags&unix.MSG_CTRUNC != 0 {
			// The kernel drops what it cannot give: a full descriptor table.
			return ends, fmt.Errorf("local link: the peer's pipes could not be taken: this process has as many files open as it may (ulimit -n)")
		}
		return ends, fmt.Errorf("%w: the local peer did not pass the link's pipes", ErrNotSDM)
	}
	for i, mode := range []int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDONLY} {
		if !isPipeEnd(fds[i], mode) || unix.SetNonblock(fds[i], true) != nil {
			closeFds(fds)
			return ends, fmt.Errorf("%w: the local peer passed something else than the link's pipes", ErrNotSDM)
		}
	}
	return pipeFiles([3]int(fds)), nil
}

// isPipeEnd says whether fd is a pipe's end open for mode.
func isPipeEnd(fd, mode int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return false
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && flags&unix.O_ACCMODE == mode
}

// pipeFiles makes files of non-blocking descriptors, which the runtime's
// poller watches.
func pipeFiles(fds [3]int) (ends [3]*os.File) {
	for i, fd := range fds {
		ends[i] = os.NewFile(uintptr(fd), "sdm local link")
	}
	return ends
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// checkPeer returns conn as a Unix socket whose peer runs as this
// process's user, or says why it is not one.
func checkPeer(conn net.Conn) (*net.UnixConn, error) {
	uc, _, err := peer(conn)
	return uc, err
}

// peer is checkPeer that also says the peer's pid.
func peer(conn net.Conn) (*net.UnixConn, int, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, 0, fmt.Errorf("%w: a local link needs a Unix socket, not %T", ErrAuth, conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, 0, err
	}
	if cerr != nil {
		return nil, 0, fmt.Errorf("%w: the peer's credentials: %v", ErrAuth, cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return nil, 0, fmt.Errorf("%w: the local peer (pid %d) runs as uid %d, not %d", ErrAuth, cred.Pid, cred.Uid, os.Getuid())
	}
	return uc, int(cred.Pid), nil
}

// LocalAddress is the Unix socket where server index of the session whose
// key is key takes the servers of its host: a name in the abstract
// namespace, which belongs to the host (to its network namespace, for a
// host emulated as one), leaves no file behind and needs no directory
// shared or not; whoever connects is checked by NewLocalLink. The name
// holds a digest of the key, so sessions never meet, and not the key.
func LocalAddress(key Key, index int) *net.UnixAddr {
	return &net.UnixAddr{Net: "unix", Name: member.Address(key, index)}
}
