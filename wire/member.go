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

	"github.com/sdm-hpc/sdm/member"
)

// A host's leader takes its members' ranks over (package member has the
// protocol and the member's side): AcceptMember reads a member's join,
// and the Member it returns asks for debuggers and learns how they
// ended.

// Member is the leader's end of a member's connection.
type Member struct {
	Index int // the member's server index
	Pid   int // the member's process, as the kernel told at its connect
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
	spawned member.Spawned
	err     error
}

// AcceptMember checks conn's peer and reads which server it is, within
// timeout; Admit or Refuse answers it. servers is the job's number of
// servers, which the member must agree on. On error conn is closed.
func AcceptMember(conn net.Conn, servers int, timeout time.Duration) (*Member, error) {
	uc, pid, err := peer(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	uc.SetDeadline(time.Now().Add(timeout))
	p, _, err := readPacket(uc, 0)
	if err == nil && (len(p) == 0 || p[0] != member.TagJoin) {
		err = fmt.Errorf("%w: a local peer that does not hand over its rank", ErrNotSDM)
	}
	var index, size uint64
	if err == nil {
		var ok bool
		if index, size, ok = member.TwoUvarints(p[1:]); !ok {
			err = fmt.Errorf("%w: a malformed join from a local peer", ErrNotSDM)
		}
	}
	switch {
	case err != nil:
	case size != uint64(servers):
		err = fmt.Errorf("server %d thinks the job has %d servers, not %d", index, size, servers)
	case index >= size:
		err = fmt.Errorf("server %d is not one of the job's %d servers", index, servers)
	}
	if err != nil && !errors.Is(err, ErrNotSDM) {
		uc.Write(append([]byte{member.TagRefuse}, err.Error()...))
	}
	if err != nil {
		uc.Close()
		return nil, err
	}
	uc.SetDeadline(time.Time{})
	return &Member{Index: int(index), Pid: pid, uc: uc, done: make(chan struct{}), replies: make(chan memberReply, 1),
		ends: make(map[int]chan unix.WaitStatus)}, nil
}

// Refuse tells the member why it is not taken, and hangs up.
func (m *Member) Refuse(reason string) {
	m.uc.Write(append([]byte{member.TagRefuse}, reason...))
	m.uc.Close()
}

// Admit tells the member its rank is taken, and watches the connection:
// Done is closed when the member hangs up.
func (m *Member) Admit() error {
	if _, err := m.uc.Write([]byte{member.TagAdmit}); err != nil {
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
		if len(p) > 0 && p[0] == member.TagEnded {
			closeFds(fds)
			pid, status, ok := member.TwoUvarints(p[1:])
			if ch := m.ends[int(pid)]; ok && ch != nil {
				ch <- unix.WaitStatus(status)
				close(ch)
				delete(m.ends, int(pid))
			}
			continue
		}
		var r memberReply
		switch {
		case len(p) > 0 && p[0] == member.TagSpawned:
			r.spawned, r.err = spawnedOf(p[1:], fds)
			if r.err == nil {
				ended := make(chan unix.WaitStatus, 1)
				m.ends[r.spawned.Pid], r.spawned.Ended = ended, ended
			}
		case len(p) > 0 && p[0] == member.TagFailed:
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
func spawnedOf(p []byte, fds []int) (member.Spawned, error) {
	pid, n := binary.Uvarint(p)
	if n <= 0 || len(fds) != 4 || pid == 0 || pid > 1<<22 {
		closeFds(fds)
		return member.Spawned{}, fmt.Errorf("%w: a debugger handed over without its pid and four descriptors", ErrNotSDM)
	}
	for i, mode := range []int{unix.O_WRONLY, unix.O_RDONLY, unix.O_RDONLY} {
		if !isPipeEnd(fds[i], mode) {
			closeFds(fds)
			return member.Spawned{}, fmt.Errorf("%w: a debugger's standard streams handed over as something else than pipes", ErrNotSDM)
		}
	}
	if unix.PidfdSendSignal(fds[3], 0, nil, 0) != nil {
		closeFds(fds)
		return member.Spawned{}, fmt.Errorf("%w: a debugger handed over without its pidfd", ErrNotSDM)
	}
	for _, fd := range fds {
		unix.SetNonblock(fd, true) // the runtime's poller waits on them
	}
	return member.Spawned{
		Stdin: os.NewFile(uintptr(fds[0]), "debugger's stdin"), Stdout: os.NewFile(uintptr(fds[1]), "debugger's stdout"),
		Stderr: os.NewFile(uintptr(fds[2]), "debugger's stderr"), Pidfd: os.NewFile(uintptr(fds[3]), "debugger's pidfd"),
		Pid: int(pid),
	}, nil
}

// Spawn asks the member for a debugger and waits for it, or for ctx.
func (m *Member) Spawn(ctx context.Context) (member.Spawned, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.uc.Write([]byte{member.TagSpawn}); err != nil {
		return member.Spawned{}, fmt.Errorf("server %d: %w", m.Index, err)
	}
	select {
	case r := <-m.replies:
		return r.spawned, r.err
	case <-m.done:
		return member.Spawned{}, fmt.Errorf("server %d hung up", m.Index)
	case <-ctx.Done():
		// A member that does not answer in time is stuck: an answer
		// coming later would be taken for the next request's.
		m.Close(false)
		return member.Spawned{}, fmt.Errorf("server %d did not start a debugger: %w", m.Index, ctx.Err())
	}
}

// Done is closed when the member has hung up (its process ended).
func (m *Member) Done() <-chan struct{} { return m.done }

// Close hangs up; quit tells the member first that the session is over,
// so that it ends without an error.
func (m *Member) Close(quit bool) {
	m.closed.Do(func() {
		if quit {
			m.uc.Write([]byte{member.TagQuit})
		}
		m.uc.Close()
	})
}

// readPacket reads one packet and the descriptors passed with it (at
// most fds: more are closed, and the packet refused).
func readPacket(uc *net.UnixConn, fds int) ([]byte, []int, error) {
	p := make([]byte, member.MaxPacket)
	oob := make([]byte, unix.CmsgSpace(4*max(fds, 1)))
	n, oobn, flags, _, err := uc.ReadMsgUnix(p, oob)
	if err != nil {
		return nil, nil, err
	}
	got := member.Rights(oob[:oobn])
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
