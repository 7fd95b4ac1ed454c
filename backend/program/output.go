package program

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend"
	"github.com/sdm-hpc/sdm/wire"
)

// Sink is where an Output sends the program's output, and what it asks
// about the program: Send passes an event up and says whether it went
// (false while the backend closes or must stay quiet), PID is the
// program's process id (0 without one).
type Sink interface {
	Send(ev backend.Event) bool
	PID() int
}

// Output turns what the program writes to its terminal into output events,
// a line at a time. A line without an end yet is sent when the terminal
// has been quiet for partialWait, when it reaches maxLine (in pieces of
// maxLine), or at once when the program stops. At most outputCredit bytes
// of output are in flight (sent up, not yet passed on by the node); beyond
// that the pump stops reading the terminal, the terminal's buffer fills,
// and the program blocks in its writes.
type Output struct {
	sink Sink
	term *Terminal
	// reading is held from a read of the terminal until what it got has
	// gone to add.
	reading sync.Mutex
	// inflight counts the bytes sent and not yet passed on; freed is
	// signalled when it drops, done closed when the backend closes.
	inflight atomic.Int64
	freed    chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	partial []byte
	timer   *time.Timer
	// last is when the terminal last gave something; held says the pump
	// waits for credit, so that the terminal is full, not quiet.
	last time.Time
	held bool
}

const (
	// partialWait is how long the terminal must stay quiet before a line
	// without an end is sent as it is.
	partialWait = 100 * time.Millisecond
	// busyWait is that time while the quiet may only seem so: a thread of
	// the program is runnable (a writer preempted mid-line on a loaded
	// node) or output waits unread in the terminal.
	busyWait = time.Second
	// maxLine bounds a line held back for its end: a longer one is sent in
	// pieces this long.
	maxLine = 1 << 20
	// outputCredit bounds the output of a rank in flight in its server.
	outputCredit = 256 << 10
)

// NewOutput starts the pump of term's output to sink; wg counts it until
// it ends (Stop, and the terminal's Close).
func NewOutput(term *Terminal, sink Sink, wg *sync.WaitGroup) *Output {
	o := &Output{sink: sink, term: term, freed: make(chan struct{}, 1), done: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		o.pump()
	}()
	return o
}

// Stop ends a pump that waits for credit; one that reads ends with the
// terminal. A nil Output does nothing.
func (o *Output) Stop() {
	if o != nil {
		o.stopOnce.Do(func() { close(o.done) })
	}
}

// pump reads the program's output. Each read, and the handling of what
// it got, happen under o.reading, so that a drain never runs between a
// read and the sending of what it got.
func (o *Output) pump() {
	rc, err := o.term.master.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		if !o.credit() {
			return
		}
		var n int
		var rerr error
		locked := false
		err := rc.Read(func(fd uintptr) bool {
			o.reading.Lock()
			n, rerr = unix.Read(int(fd), buf)
			if rerr == unix.EAGAIN {
				o.reading.Unlock()
				return false // wait until there is something to read
			}
			locked = true
			return true
		})
		if n > 0 {
			o.add(buf[:n])
		}
		if locked {
			o.reading.Unlock()
		}
		if err != nil || rerr != nil || n == 0 {
			return
		}
	}
}

// credit waits until the output in flight is below outputCredit, and says
// false when the backend closed meanwhile. While it waits the terminal
// is full rather than quiet, so a line without an end waits too.
func (o *Output) credit() bool {
	for o.inflight.Load() >= outputCredit {
		o.mu.Lock()
		o.held = true
		o.mu.Unlock()
		select {
		case <-o.freed:
		case <-o.done:
			return false
		}
	}
	o.mu.Lock()
	if o.held {
		o.held = false
		o.last = time.Now()
		o.arm()
	}
	o.mu.Unlock()
	return true
}

func (o *Output) add(data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = time.Now()
	o.partial = append(o.partial, data...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.send(o.partial[:i+1])
		o.partial = o.partial[i+1:]
	}
	for len(o.partial) >= maxLine {
		o.send(o.partial[:maxLine])
		o.partial = o.partial[maxLine:]
	}
	if len(o.partial) == 0 {
		// Nothing refers to the old array any more: start afresh rather
		// than keep a long line's worth of memory.
		o.partial = nil
	}
	o.arm()
}

// arm starts the quiet-spell timer for a line without an end. o.mu is held.
func (o *Output) arm() {
	if len(o.partial) > 0 && o.timer == nil {
		o.timer = time.AfterFunc(partialWait, o.quiet)
	}
}

// quiet sends a line without an end once the terminal has been quiet for
// partialWait since it last gave something, after taking in what is on
// its way through the terminal; a terminal that is merely unread (the
// pump waits for credit) is not quiet.
func (o *Output) quiet() {
	o.mu.Lock()
	held := o.held
	o.mu.Unlock()
	if !held {
		o.pull()
	}
	wait := partialWait
	if o.busy() {
		wait = busyWait
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.timer = nil
	switch {
	case len(o.partial) == 0 || o.held:
		// credit arms the timer again when the pump goes on.
	case time.Since(o.last) < wait:
		o.timer = time.AfterFunc(min(partialWait, wait-time.Since(o.last)), o.quiet)
	default:
		o.send(o.partial)
		o.partial = nil
	}
}

// busy says whether the terminal's quiet may be only apparent: output
// waits unread in it, or a thread of the program is runnable.
func (o *Output) busy() bool {
	if o.term != nil {
		var unread int
		Control(o.term.master, func(fd int) (err error) {
			unread, err = unix.IoctlGetInt(fd, unix.TIOCINQ)
			return err
		})
		if unread > 0 {
			return true
		}
	}
	pid := o.sink.PID()
	return pid > 0 && runnable(pid)
}

// runnable says whether a thread of process pid is running or waits for
// a CPU (state R in /proc/PID/task/TID/stat).
func runnable(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, t := range tasks {
		if fields := StatFields(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name())); len(fields) > 0 && fields[0] == "R" {
			return true
		}
	}
	return false
}

// flush sends the line without an end at once.
func (o *Output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	if len(o.partial) > 0 {
		o.send(o.partial)
		o.partial = nil
	}
}

// send emits one piece of output. o.mu is held, which keeps pieces in
// order. The credit it takes comes back when the node has passed it on,
// or at once when it was not sent.
func (o *Output) send(text []byte) {
	n := int64(len(text))
	o.inflight.Add(n)
	ev := backend.Event{Op: wire.EventOutput, Body: wire.MustEncode(wire.Output{Stream: "tty", Text: string(text)}),
		Sent: func() { o.release(n) }}
	if !o.sink.Send(ev) {
		o.release(n)
	}
}

func (o *Output) release(n int64) {
	o.inflight.Add(-n)
	select {
	case o.freed <- struct{}{}:
	default:
	}
}

// Drain takes in and sends what the program wrote before it stopped or
// ended, so that its output comes before the news of the stop. It takes
// no credit: what a stopped program left in its terminal is bounded by
// the terminal's buffer, and the stop must not wait for the tree to take
// it.
func (o *Output) Drain() {
	if o == nil {
		return
	}
	o.pull()
	o.flush()
}

// pull takes in what the program has written, without waiting for more.
// Its writes may not have passed the terminal's line discipline yet,
// where TIOCINQ would count them (a busy node's kernel pushes them
// through later): a read of the master pushes them through first, so
// pull reads until the terminal says there is nothing more.
func (o *Output) pull() {
	if o.term == nil {
		return
	}
	o.reading.Lock()
	defer o.reading.Unlock()
	buf := make([]byte, 32<<10)
	for {
		var n int
		Control(o.term.master, func(fd int) (err error) {
			n, err = unix.Read(fd, buf)
			return err
		})
		if n <= 0 {
			return
		}
		o.add(buf[:n])
	}
}
