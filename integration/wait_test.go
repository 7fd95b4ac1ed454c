package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/testkit/testenv"
)

// Ring under mpirun with a breakpoint only rank 0 reaches (before it
// sends): the others block in MPI_Recv and never stop. wait any returns
// with rank 0 and lists the others; wait 2 runs out of time, says which
// still run, and the script goes on to halt, wait and stacks; a next over
// MPI_Recv whose sender is halted reports where it began after --timeout,
// and goes on once the others are continued. The timed-out waits make the
// exit status 1, as sdm debug --help says.
func TestWaitAnyAndTimeoutsUnderMpirun(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	out, stderr, code := run(t, "", "debug", "--rm", "openmpi", "-n", "4", "--launcher-arg=--oversubscribe", "--timeout", "5s",
		"-e", "break ring.c:10", "-e", "run", "-e", "wait any 120", "-e", "wait 2",
		"-e", "halt", "-e", "wait 60", "-e", "stacks",
		"-e", "[0] next", "-e", "[0] next", "-e", "[0] status",
		"-e", "[1-3] continue", "-e", "[0] wait 60",
		"--", filepath.Join(bin, "ring"))
	if code != 1 || !strings.Contains(stderr, "still ran when a wait ended") {
		t.Errorf("exit %d, want 1 for the waits that ran out of time; stderr:\n%s", code, stderr)
	}
	// wait any shows the stop, then the ranks still running (with perhaps
	// their library loads between the two).
	hit, rest := strings.Index(out, "[0] stopped in pass at examples/ring/ring.c:10 (breakpoint 1)\n"), strings.Index(out, "[1-3] still running\n")
	if hit < 0 || rest < hit {
		t.Errorf("wait any did not show rank 0's stop, then [1-3] still running")
	}
	for _, want := range []string{
		"[1-3] still running after 2s\n",
		"[0] pass at examples/ring/ring.c:10 (1 rank)\n",
		"[1-3] pass at examples/ring/ring.c:13 (3 ranks)\n",
		"[0] stopped in pass at examples/ring/ring.c:11 (end-stepping-range)\n",
		"[0] still running next from pass at examples/ring/ring.c:11 after 5s: a call there may wait for other ranks (continue them, or halt)\n",
		"[0] running next from pass at examples/ring/ring.c:11\n",
		"[0] stopped in pass at examples/ring/ring.c:17 (end-stepping-range)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if halted := ranksOf(out, "(SIGINT)"); halted.String() != "1-3" {
		t.Errorf("halt stopped ranks %v, want 1-3", halted)
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", out, stderr)
	}
}

// The interactive console on a terminal, hang under mpirun (ranks 0-2 in
// MPI_Recv, rank 3 computing): ^C during wait stops the wait, says which
// ranks still run and leaves them so; the next command works; ^C at the
// prompt halts the running ranks, whose stops print (lazy servers stop
// them with SIGSTOP, without a gdb).
func TestInterruptAtTheTerminal(t *testing.T) {
	testenv.RequireTool(t, "gdb")
	testenv.RequireTool(t, "mpirun.openmpi", "mpirun")
	bin := testenv.Examples(t)
	term := openPTY(t)
	cmd := testenv.Command(t, sdmBin, "debug", "--rm", "openmpi", "-n", "4", "--launcher-arg=--oversubscribe",
		"--timeout", "60s", "--", filepath.Join(bin, "hang"))
	cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=1", "HOME="+t.TempDir())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.slave, term.slave, term.slave
	// A session of its own with the terminal as its controlling one, so
	// that ^C is the terminal's SIGINT to sdm, as at a real terminal; its
	// process group is its own too, which the test's cleanup kills.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	p := start(t, cmd) // standard error goes to p.out

	term.expect(t, "(sdm) ", 120*time.Second)
	term.command(t, "run")
	// Once every rank has said what it does, 0-2 are in MPI_Recv and 3 in
	// compute (under load, gdb may take long to read the libraries first).
	term.until(t, "every rank's first line", 180*time.Second, func(out string) bool {
		return strings.Count(out, ": waiting") == 3 && strings.Contains(out, "rank 3: computing")
	})
	term.command(t, "wait")
	term.running(t) // the wait has begun
	term.write(t, "\x03")
	term.expect(t, "interrupted: [0-3] still running", 30*time.Second)

	term.command(t, "status")
	term.expect(t, "[0-3] running", 30*time.Second)

	term.prompt(t)
	term.write(t, "\x03")
	term.expect(t, "halting [0-3]", 30*time.Second)
	term.expect(t, "(SIGSTOP)", 60*time.Second)
	term.command(t, "[0-2] where")
	term.expect(t, "PMPI_Recv", 30*time.Second)
	term.command(t, "quit")
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("sdm debug after quit: %v\n%s", p.err, p.out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("sdm debug still runs 60s after quit:\n%s", p.out.String())
	}
	// News at the prompt erases the prompt's line first (ESC [K).
	out := strings.NewReplacer("\r", "", "\x1b[K", "").Replace(term.output.String())
	if halted := ranksOf(out, "(SIGSTOP)"); halted.String() != "0-3" {
		t.Errorf("^C at the prompt stopped ranks %v, want 0-3", halted)
	}
	if !strings.Contains(out, "[3] stopped in compute at examples/hang/hang.c:") {
		t.Error("the computing rank's stop was not shown")
	}
	if errs := p.out.String(); strings.Contains(errs, "context canceled") || strings.Contains(errs, "error:") {
		t.Errorf("a ^C printed an error:\n%s", errs)
	}
	if t.Failed() {
		t.Logf("the terminal showed:\n%s", out)
	}
}

// pty is a pseudo-terminal for a program under test: the test types at
// the master end and reads what the program writes there.
type pty struct {
	master, slave *os.File
	output        lockedBuffer // what the program wrote
	read          int          // how much of it expect has gone past
}

func openPTY(t *testing.T) *pty {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	// Line editing needs columns; without them liner gives up on the terminal.
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 200}); err != nil {
		t.Fatal(err)
	}
	p := &pty{master: master, slave: slave}
	p.output.notify = func() {
		select {
		case anyOutput <- struct{}{}:
		default:
		}
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.output.Write(buf[:n])
			if err != nil {
				return // closed when the test ends
			}
		}
	}()
	return p
}

func (p *pty) write(t *testing.T, text string) {
	t.Helper()
	if _, err := p.master.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// expect waits until the program has written what, after what earlier
// expects found.
func (p *pty) expect(t *testing.T, what string, within time.Duration) {
	t.Helper()
	p.until(t, fmt.Sprintf("%q", what), within, func(out string) bool {
		i := strings.Index(out, what)
		if i >= 0 {
			p.read += i + len(what)
		}
		return i >= 0
	})
}

// until waits until done holds for what the program has written after
// what earlier expects found.
func (p *pty) until(t *testing.T, what string, within time.Duration, done func(out string) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		out := p.output.String()
		if done(out[p.read:]) {
			return
		}
		select {
		case <-anyOutput:
		case <-deadline:
			t.Fatalf("no %s within %v; the terminal shows:\n%s", what, within, out)
		}
	}
}

// isig waits until the terminal's ISIG flag is on: a ^C is a signal, as
// while a command runs, or off: a ^C is a key, as at liner's prompt. The
// mode changes without a word on the terminal, so it is polled, under a
// deadline.
func (p *pty) isig(t *testing.T, on bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ISIG != 0 == on {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the terminal's ISIG did not turn %v within 60s:\n%s", on, p.output.String())
		}
	}
}

// prompt waits until the prompt reads keys.
func (p *pty) prompt(t *testing.T) { p.isig(t, false) }

// running waits until a command runs (the prompt has let go).
func (p *pty) running(t *testing.T) { p.isig(t, true) }

// command types line at the prompt and waits until the prompt has it (its
// echo): then the command before has ended, and the next change of the
// terminal's mode is this command's start.
func (p *pty) command(t *testing.T, line string) {
	t.Helper()
	p.prompt(t)
	p.write(t, line+"\r")
	p.expect(t, line, 60*time.Second)
}
