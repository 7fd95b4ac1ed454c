package gdbmi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/backend/program"
	"github.com/sdm-hpc/sdm/internal/fifo"
	"github.com/sdm-hpc/sdm/member"
)

// GDB is one gdb running the GDB/MI interpreter. Commands go one at a
// time (Run), so that the console output between a command and its result
// belongs to that command; asynchronous records arrive on Async.
type GDB struct {
	path  string
	pid   int
	stdin io.WriteCloser
	// kill ends gdb at once; wait waits for it to end, once its output
	// is read to the end.
	kill  func()
	wait  func() error
	async chan Record
	// queue holds the async records read and not yet taken by Async's
	// reader. It is unbounded: the backend runs gdb commands of its own
	// while it handles a record (it reads the symbols of new libraries at
	// a stop, it lets a load go on), and gdb must be read meanwhile,
	// however much it prints, or the answer those commands wait for would
	// never be seen.
	queue *fifo.Queue[Record]
	done  chan struct{}
	// pidfd is gdb's own pidfd (nil where the kernel has none), which
	// tells at once that gdb ended, before its output is read to the end.
	pidfd *os.File

	run sync.Mutex // one command at a time

	mu      sync.Mutex
	token   uint64
	waiting *pending
	err     error        // why gdb ended, once done is closed
	stderr  bytes.Buffer // gdb's own complaints, for the error when it dies
	// lastWords is the end of gdb's log stream: an internal error's text
	// goes there before gdb aborts.
	lastWords []string
	// handled counts the records Async's reader has acted on (Handled);
	// progress is closed and replaced at each.
	handled  uint64
	progress chan struct{}
}

type pending struct {
	token   uint64
	result  chan Record
	console strings.Builder
}

// Start runs gdb as member.GDB says, as a child of this process.
func Start(path string) (*GDB, error) {
	cmd, err := member.GDB(path)
	if err != nil {
		return nil, err
	}
	g := newGDB(cmd.Path)
	cmd.Stderr = &lockedWriter{mu: &g.mu, w: &g.stderr}
	if g.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	g.kill = func() { cmd.Process.Kill() }
	g.pid = cmd.Process.Pid
	g.wait = cmd.Wait
	if fd, err := unix.PidfdOpen(cmd.Process.Pid, 0); err == nil {
		g.pidfd = os.NewFile(uintptr(fd), "pidfd of gdb")
	}
	go g.read(stdout)
	go g.forward()
	return g, nil
}

// Adopt drives a gdb that another process started as member.GDB says
// (a rank's own server, member.Spawned), whose pipes and pidfd it was handed:
// it signals and watches gdb through the pidfd, since gdb is not its
// child.
func Adopt(path string, s member.Spawned) *GDB {
	g := newGDB(path)
	g.stdin, g.pidfd, g.pid = s.Stdin, s.Pidfd, s.Pid
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(&lockedWriter{mu: &g.mu, w: &g.stderr}, s.Stderr)
		s.Stderr.Close()
	}()
	g.kill = func() {
		program.Control(s.Pidfd, func(fd int) error { return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) })
	}
	g.wait = func() error {
		if rc, err := s.Pidfd.SyscallConn(); err == nil {
			rc.Read(func(fd uintptr) bool { return ended(int(fd)) })
		}
		// How it ended, once its parent has reaped it and said; and its
		// last words, unless something it started holds its stderr.
		var status error
		timeout := time.After(time.Second)
		select {
		case ws, ok := <-s.Ended:
			if ok {
				status = waitError(ws)
			}
		case <-timeout:
		}
		select {
		case <-copied:
		case <-timeout:
		}
		return status
	}
	go func() {
		g.read(s.Stdout)
		s.Stdout.Close()
	}()
	go g.forward()
	return g
}

func newGDB(path string) *GDB {
	return &GDB{path: path, async: make(chan Record), queue: fifo.New[Record](), done: make(chan struct{}), progress: make(chan struct{})}
}

// Ended reports whether gdb's process has ended, which its pidfd tells
// before its output has been read to the end.
func (g *GDB) Ended() bool {
	select {
	case <-g.done:
		return true
	default:
	}
	if g.pidfd == nil {
		return false
	}
	var gone bool
	if program.Control(g.pidfd, func(fd int) error {
		gone = ended(fd)
		return nil
	}) != nil {
		return true // closed: gdb has been reaped
	}
	return gone
}

// Mark is how many asynchronous records gdb has printed so far. Taken
// after a command's answer, it counts every record gdb printed before
// that answer.
func (g *GDB) Mark() uint64 { return uint64(g.queue.Pushed()) }

// Handled tells that Async's reader has acted on one more record.
func (g *GDB) Handled() {
	g.mu.Lock()
	g.handled++
	close(g.progress)
	g.progress = make(chan struct{})
	g.mu.Unlock()
}

// WaitHandled waits until Async's reader has acted on the first n
// records (a Mark), so that what gdb said before an answer has been
// taken into account; false when ctx ended first.
func (g *GDB) WaitHandled(ctx context.Context, n uint64) bool {
	for {
		g.mu.Lock()
		handled, progress := g.handled, g.progress
		g.mu.Unlock()
		if handled >= n {
			return true
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return false
		}
	}
}

// Async delivers exec, status and notify records in gdb's order. It is
// closed when gdb has ended.
func (g *GDB) Async() <-chan Record { return g.async }

// Done is closed when gdb has ended; Err says how.
func (g *GDB) Done() <-chan struct{} { return g.done }

// Err says why gdb ended (nil while it runs).
func (g *GDB) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Run sends an MI command and waits for its result. A ^error result is
// returned as an error holding gdb's message; console output printed on
// the way (CLI commands run through -interpreter-exec) comes back as text.
func (g *GDB) Run(ctx context.Context, command string) (Record, string, error) {
	g.run.Lock()
	defer g.run.Unlock()
	g.mu.Lock()
	if g.err != nil {
		err := g.err
		g.mu.Unlock()
		return Record{}, "", err
	}
	g.token++
	p := &pending{token: g.token, result: make(chan Record, 1)}
	g.waiting = p
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting = nil
		g.mu.Unlock()
	}()
	if _, err := fmt.Fprintf(g.stdin, "%d%s\n", p.token, command); err != nil {
		<-g.done
		return Record{}, "", g.Err()
	}
	select {
	case r := <-p.result:
		g.mu.Lock()
		console := p.console.String()
		g.mu.Unlock()
		if r.Class == "error" {
			return r, console, newRefusal(r.Results.S("msg"))
		}
		return r, console, nil
	case <-g.done:
		return Record{}, "", g.Err()
	case <-ctx.Done():
		return Record{}, "", fmt.Errorf("gdb did not answer %q: %w", firstWord(command), ctx.Err())
	}
}

// Close asks gdb to exit and kills it if it does not within a second.
func (g *GDB) Close() error {
	g.stdin.Close() // gdb exits at the end of its input
	select {
	case <-g.done:
	case <-time.After(time.Second):
		g.kill()
		<-g.done
	}
	return nil
}

// Kill ends gdb at once.
func (g *GDB) Kill() { g.kill() }

func (g *GDB) read(stdout io.Reader) {
	defer g.queue.Close()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // a large struct prints on one line
	failing := false
	for sc.Scan() {
		r, err := Parse(sc.Text())
		if err != nil {
			continue // not MI: gdb's own chatter; the program has its own terminal
		}
		switch r.Type {
		case Result:
			g.mu.Lock()
			if p := g.waiting; p != nil && r.HasTok && r.Token == p.token {
				p.result <- r
			}
			g.mu.Unlock()
		case Console:
			g.mu.Lock()
			if p := g.waiting; p != nil {
				p.console.WriteString(r.Text)
			}
			g.mu.Unlock()
		case Log:
			if strings.TrimSpace(r.Text) != "" {
				g.mu.Lock()
				g.lastWords = append(g.lastWords[max(0, len(g.lastWords)-7):], r.Text)
				g.mu.Unlock()
			}
			if strings.Contains(r.Text, "internal-error:") && !failing {
				// gdb quits on it (member.GDB), but its way out kills or
				// detaches what it debugs and can hang there on the
				// state the error left: it is given a moment, then ended.
				failing = true
				time.AfterFunc(internalErrorGrace, func() {
					select {
					case <-g.done:
					default:
						g.kill()
					}
				})
			}
		case Exec, Status, Notify:
			g.mu.Lock()
			if p := g.waiting; p != nil {
				r.During = p.token
			}
			g.mu.Unlock()
			g.queue.Push(r)
		}
	}
	err := g.wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	msg := strings.TrimSpace(g.stderr.String())
	if msg == "" && err != nil {
		msg = lastWords(g.lastWords)
	}
	switch {
	case err != nil && msg != "":
		g.err = fmt.Errorf("gdb (%s) exited: %v: %s", g.path, err, lastLine(msg))
	case err != nil:
		g.err = fmt.Errorf("gdb (%s) exited: %v", g.path, err)
	default:
		g.err = fmt.Errorf("gdb (%s) exited", g.path)
	}
	close(g.done)
	if g.pidfd != nil {
		g.pidfd.Close()
	}
}

// forward hands the queued records to Async's reader, and closes Async
// after the last one once gdb has ended.
func (g *GDB) forward() {
	defer close(g.async)
	for {
		r, err := g.queue.Pop(context.Background())
		if err != nil {
			return // closed and empty: gdb has ended
		}
		g.async <- r
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() < 64<<10 {
		l.w.Write(p)
	}
	return len(p), nil
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

// internalErrorGrace is how long a gdb that met an internal error has to
// end before it is killed.
const internalErrorGrace = 2 * time.Second

// lastWords picks from the end of gdb's log stream what says why it
// ended: an internal error's line, else the last line.
func lastWords(log []string) string {
	for _, text := range log {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "internal-error") {
				return strings.TrimSpace(line)
			}
		}
	}
	if len(log) == 0 {
		return ""
	}
	return strings.TrimSpace(log[len(log)-1])
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
