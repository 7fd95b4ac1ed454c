package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The servers of a host other than its leader may hand their ranks to
// the leader instead of joining the tree (a host node that serves its
// ranks itself): each member connects to the leader's Unix socket
// (LocalAddress), a SOCK_SEQPACKET one, and says which server it is; the
// leader serves the member's rank from then on, and asks the member for
// a debugger whenever the rank needs one, so that the debugger and the
// program it starts are the member's children, with the environment,
// descriptors, binding and limits the rank's launcher gave the member.
// The connection lives as long as both ends: either one's end is the
// other's news. Both ends check that the peer runs as this user
// (SO_PEERCRED), as local links do.
//
// Each message is one packet: a tag byte, then its fields.
const (
	tagJoin    = 'M' // member: uvarint index, uvarint servers
	tagAdmit   = 'A' // leader: the member's rank is the leader's now
	tagRefuse  = 'R' // leader: why not, as text; then it hangs up
	tagSpawn   = 'S' // leader: start a debugger
	tagSpawned = 's' // member: uvarint pid; its stdin, stdout, stderr and pidfd passed
	tagFailed  = 'F' // member: why the debugger did not start, as text
	tagQuit    = 'Q' // leader: the session is over; then it hangs up
	tagEnded   = 'x' // member: a debugger it spawned ended: uvarint pid, uvarint wait status
)

// maxPacket bounds a packet of the protocol: a tag and an error's text.
const maxPacket = 4096

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
	closeFiles([]*os.File{s.Stdin, s.Stdout, s.Stderr, s.Pidfd})
}

// ErrLeaderGone says that a member's leader hung up without ending the
// session: it was killed, or it failed.
var ErrLeaderGone = errors.New("the leader of this host's servers is gone")

// Member is the leader's end of a member's connection.
type Member struct {
	Index int // the member's server index
	uc    *net.UnixConn
	done  chan struct{}

	mu      sync.Mutex // one spawn at a time
	replies chan memberReply
	closed  sync.Once
	// ends are the debuggers spawned and not yet told ended, by pid;
	// read's own.
	ends map[int]chan unix.WaitStatus
}

type memberReply struct {
	spawned Spawned
	err     error
}

// AcceptMember checks conn's peer and reads which server it is, within
// timeout; Admit or Refuse answers it. servers is the job's number of
// servers, which the member must agree on. On error conn is closed.
func AcceptMember(conn net.Conn, servers int, timeout time.Duration) (*Member, error) {
	uc, err := checkPeer(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	uc.SetDeadline(time.Now().Add(timeout))
	p, _, err := readPacket(uc, 0)
	if err == nil && (len(p) == 0 || p[0] != tagJoin) {
		err = fmt.Errorf("%w: a local peer that does not hand over its rank", ErrNotSDM)
	}
	var index, size uint64
	if err == nil {
		index, size, err = twoUvarints(p[1:])
	}
	switch {
	case err != nil:
	case size != uint64(servers):
		err = fmt.Errorf("server %d thinks the job has %d servers, not %d", index, size, servers)
	case index >= size:
		err = fmt.Errorf("server %d is not one of the job's %d servers", index, servers)
	}
	if err != nil && !errors.Is(err, ErrNotSDM) {
		uc.Write(append([]byte{tagRefuse}, err.Error()...))
	}
	if err != nil {
		uc.Close()
		return nil, err
	}
	uc.SetDeadline(time.Time{})
	return &Member{Index: int(index), uc: uc, done: make(chan struct{}), replies: make(chan memberReply, 1),
		ends: make(map[int]chan unix.WaitStatus)}, nil
}

// Refuse tells the member why it is not taken, and hangs up.
func (m *Member) Refuse(reason string) {
	m.uc.Write(append([]byte{tagRefuse}, reason...))
	m.uc.Close()
}

// Admit tells the member its rank is taken, and watches the connection:
// Done is closed when the member hangs up.
func (m *Member) Admit() error {
	if _, err := m.uc.Write([]byte{tagAdmit}); err != nil {
		m.uc.Close()
		return err
	}
	go m.read()
	return nil
}

// read takes the member's answers until it hangs up.
func (m *Member) read() {
	defer func() {
		for _, ch := range m.ends {
			close(ch)
		}
		close(m.done)
	}()
	for {
		p, fds, err := readPacket(m.uc, 4)
		if err != nil {
			return
		}
		if len(p) > 0 && p[0] == tagEnded {
			closeFds(fds)
			pid, status, err := twoUvarints(p[1:])
			if ch := m.ends[int(pid)]; err == nil && ch != nil {
				ch <- unix.WaitStatus(status)
				close(ch)
				delete(m.ends, int(pid))
			}
			continue
		}
		var r memberReply
		switch {
		case len(p) > 0 && p[0] == tagSpawned:
			r.spawned, r.err = spawnedOf(p[1:], fds)
			if r.err == nil {
				ended := make(chan unix.WaitStatus, 1)
				m.ends[r.spawned.Pid], r.spawned.Ended = ended, ended
			}
		case len(p) > 0 && p[0] == tagFailed:
			closeFds(fds)
			r.err = errors.New(string(p[1:]))
		default:
			closeFds(fds)
			r.err = fmt.Errorf("%w: server %d sent %q", ErrNotSDM, m.Index, p)
		}
		select {
		case m.replies <- r:
		default: // not asked for: a confused peer
			r.spawned.Close()
		}
	}
}

// spawnedOf checks the descriptors of a spawned debugger.
func spawnedOf(p []byte, fds []int) (Spawned, error) {
	pid, n := binary.Uvarint(p)
	if n <= 0 || len(fds) != 4 || pid == 0 || pid > 1<<22 {
		closeFds(fds)
		return Spawned{}, fmt.Errorf("%w: a debugger handed over without its pid and four descriptors", ErrNotSDM)
	}
	for i, mode := range []int{unix.O_WRONLY, unix.O_RDONLY, unix.O_RDONLY} {
		if !isPipeEnd(fds[i], mode) {
			closeFds(fds)
			return Spawned{}, fmt.Errorf("%w: a debugger's standard streams handed over as something else than pipes", ErrNotSDM)
		}
	}
	if unix.PidfdSendSignal(fds[3], 0, nil, 0) != nil {
		closeFds(fds)
		return Spawned{}, fmt.Errorf("%w: a debugger handed over without its pidfd", ErrNotSDM)
	}
	for _, fd := range fds {
		unix.SetNonblock(fd, true) // the runtime's poller waits on them
	}
	return Spawned{
		Stdin: os.NewFile(uintptr(fds[0]), "debugger's stdin"), Stdout: os.NewFile(uintptr(fds[1]), "debugger's stdout"),
		Stderr: os.NewFile(uintptr(fds[2]), "debugger's stderr"), Pidfd: os.NewFile(uintptr(fds[3]), "debugger's pidfd"),
		Pid: int(pid),
	}, nil
}

// Spawn asks the member for a debugger and waits for it, or for ctx.
func (m *Member) Spawn(ctx context.Context) (Spawned, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.uc.Write([]byte{tagSpawn}); err != nil {
		return Spawned{}, fmt.Errorf("server %d: %w", m.Index, err)
	}
	select {
	case r := <-m.replies:
		return r.spawned, r.err
	case <-m.done:
		return Spawned{}, fmt.Errorf("server %d hung up", m.Index)
	case <-ctx.Done():
		// A member that does not answer in time is stuck: an answer
		// coming later would be taken for the next request's.
		m.Close(false)
		return Spawned{}, fmt.Errorf("server %d did not start a debugger: %w", m.Index, ctx.Err())
	}
}

// Done is closed when the member has hung up (its process ended).
func (m *Member) Done() <-chan struct{} { return m.done }

// Close hangs up; quit tells the member first that the session is over,
// so that it ends without an error.
func (m *Member) Close(quit bool) {
	m.closed.Do(func() {
		if quit {
			m.uc.Write([]byte{tagQuit})
		}
		m.uc.Close()
	})
}

// Leader is a member's end of its connection to its leader.
type Leader struct {
	uc *net.UnixConn
}

// JoinLeader hands server index's rank over conn to the host's leader,
// in a job of servers servers, and waits for the leader to take it.
// On error conn is closed.
func JoinLeader(conn net.Conn, index, servers int, timeout time.Duration) (*Leader, error) {
	uc, err := checkPeer(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	uc.SetDeadline(time.Now().Add(timeout))
	join := binary.AppendUvarint(binary.AppendUvarint([]byte{tagJoin}, uint64(index)), uint64(servers))
	var p []byte
	if _, err = uc.Write(join); err == nil {
		p, _, err = readPacket(uc, 0)
	}
	switch {
	case err != nil:
	case len(p) > 0 && p[0] == tagRefuse:
		err = fmt.Errorf("%w: the leader refused us: %s", ErrAuth, p[1:])
	case len(p) != 1 || p[0] != tagAdmit:
		err = fmt.Errorf("%w: the leader answered %q", ErrNotSDM, p)
	}
	if err != nil {
		uc.Close()
		return nil, err
	}
	uc.SetDeadline(time.Time{})
	return &Leader{uc: uc}, nil
}

// Serve answers the leader's requests for a debugger with spawn, whose
// Spawned files are closed once passed, until the leader ends the
// session (nil), hangs up (ErrLeaderGone) or ctx ends (its error).
func (l *Leader) Serve(ctx context.Context, spawn func() (Spawned, error)) error {
	stop := context.AfterFunc(ctx, func() { l.uc.Close() })
	defer stop()
	defer l.uc.Close()
	for {
		p, fds, err := readPacket(l.uc, 0)
		closeFds(fds)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return ErrLeaderGone
		case len(p) == 1 && p[0] == tagQuit:
			return nil
		case len(p) == 1 && p[0] == tagSpawn:
			if err := l.answer(spawn); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: the leader sent %q", ErrNotSDM, p)
		}
	}
}

// answer starts a debugger and passes it on.
func (l *Leader) answer(spawn func() (Spawned, error)) error {
	s, err := spawn()
	if err != nil {
		msg := err.Error()
		if len(msg) > maxPacket-1 {
			msg = msg[:maxPacket-1]
		}
		_, err = l.uc.Write(append([]byte{tagFailed}, msg...))
		return err
	}
	defer s.Close()
	files := []*os.File{s.Stdin, s.Stdout, s.Stderr, s.Pidfd}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	_, _, err = l.uc.WriteMsgUnix(binary.AppendUvarint([]byte{tagSpawned}, uint64(s.Pid)), unix.UnixRights(fds...), nil)
	if err == nil && s.Wait != nil {
		go func() {
			status := s.Wait()
			l.uc.Write(binary.AppendUvarint(binary.AppendUvarint([]byte{tagEnded}, uint64(s.Pid)), uint64(status)))
		}()
	}
	return err
}

// readPacket reads one packet and the descriptors passed with it (at
// most fds: more are closed, and the packet refused).
func readPacket(uc *net.UnixConn, fds int) ([]byte, []int, error) {
	p := make([]byte, maxPacket)
	oob := make([]byte, unix.CmsgSpace(4*max(fds, 1)))
	n, oobn, flags, _, err := uc.ReadMsgUnix(p, oob)
	if err != nil {
		return nil, nil, err
	}
	var got []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			more, _ := unix.ParseUnixRights(&msgs[i])
			got = append(got, more...)
		}
	}
	if n == 0 {
		closeFds(got)
		return nil, nil, errors.New("hung up") // a seqpacket's end
	}
	if flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 || len(got) > fds {
		closeFds(got)
		return nil, nil, fmt.Errorf("%w: a packet too large, or with descriptors not expected", ErrNotSDM)
	}
	return p[:n], got, nil
}

func twoUvarints(p []byte) (a, b uint64, err error) {
	a, n := binary.Uvarint(p)
	if n > 0 {
		var m int
		if b, m = binary.Uvarint(p[n:]); m > 0 && n+m == len(p) {
			return a, b, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: a malformed join from a local peer", ErrNotSDM)
}
