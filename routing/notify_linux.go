package routing

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// inotify watches the directory of the routing file rather than the file,
// because the file usually does not exist yet and arrives by rename.
//
// It blocks in poll(2) on the inotify descriptor and an eventfd in the
// calling goroutine, rather than in a reader goroutine, so that nothing is
// left blocked once Wait returns: the eventfd is how the end of the context
// interrupts the poll.
type inotify struct {
	fd   int // inotify descriptor; -1 once the watch is lost
	wake int // eventfd, written when the context ends
	name string
	stop func() bool // unregisters the context callback
	buf  []byte

	mu     sync.Mutex // keeps the context callback off closed descriptors
	closed bool
}

const watchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_CLOSE_WRITE | unix.IN_MODIFY | unix.IN_ONLYDIR

// newInotify watches for name in dir; an empty name means any file of dir.
func newInotify(ctx context.Context, dir, name string) (notifier, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	// A missing directory makes this fail; Wait then polls, which also
	// copes with the directory appearing later.
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		unix.Close(fd)
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	w := &inotify{fd: fd, wake: wake, name: name, buf: make([]byte, 8192)}
	w.stop = context.AfterFunc(ctx, w.wakeUp)
	return w, nil
}

func (w *inotify) wakeUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(w.wake, one[:])
	}
}

func (w *inotify) close() {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
	unix.Close(w.wake)
}

func (w *inotify) wait(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return
		}
		if w.fd < 0 {
			pollNotifier{}.wait(ctx, left)
			return
		}
		fds := []unix.PollFd{
			{Fd: int32(w.fd), Events: unix.POLLIN},
			{Fd: int32(w.wake), Events: unix.POLLIN},
		}
		// Round up: a zero timeout would spin for the last sub-millisecond.
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		_, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			w.lose()
			continue
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents != 0 && w.drain() {
			return
		}
	}
}

// lose gives up on inotify; the slow poll carries on alone.
func (w *inotify) lose() {
	w.mu.Lock()
	defer w.mu.Unlock()
	unix.Close(w.fd)
	w.fd = -1
}

// drain reads every queued event and reports whether any may concern the
// file. Reading them all at once also coalesces the stream of IN_MODIFY
// events an in-place writer produces into one re-read.
func (w *inotify) drain() bool {
	relevant := false
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if !errors.Is(err, unix.EAGAIN) {
				w.lose()
				relevant = true
			}
			return relevant
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			end := min(start+nameLen, n)
			off = start + nameLen
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				// Events were dropped; one of them may have been ours.
				relevant = true
			case mask&unix.IN_IGNORED != 0:
				// The directory went away or was unmounted: the watch
				// is gone and only polling can still see the file.
				w.lose()
				return true
			case w.name == "" || string(cstring(w.buf[start:end])) == w.name:
				relevant = true
			}
		}
	}
}

// cstring returns the NUL-padded name inotify appends to an event.
func cstring(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
