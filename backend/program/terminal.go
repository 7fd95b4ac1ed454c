package program

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Terminal is a pseudo-terminal for the debugged program, so that its
// output never mixes with a debugger's own output, and the program sees a
// terminal as it would when run by hand.
type Terminal struct {
	master *os.File // we read the program's output here
	// slave stays open on our side: without it, reading the master fails
	// with EIO whenever no program holds the terminal (before run, after
	// exit), and a reader would spin. A program started here gets it as
	// its standard input and outputs.
	slave *os.File
	name  string
}

// Name is the terminal's device, /dev/pts/N, for a debugger to hand to
// the program it starts.
func (t *Terminal) Name() string { return t.name }

// Slave is the program's side of the terminal, for a program started
// without a debugger.
func (t *Terminal) Slave() *os.File { return t.slave }

// OpenTerminal opens a new pseudo-terminal that passes the program's
// output through as written (no \n to \r\n) and echoes nothing.
func OpenTerminal() (*Terminal, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open a terminal for the program: %w", err)
	}
	var n int
	err = Control(master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlock terminal: %w", err)
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return err
	})
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("open a terminal for the program: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	slave, err := os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	// Output as the program wrote it (no \n to \r\n), and no echo of input.
	if tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err == nil {
		tio.Oflag &^= unix.OPOST
		tio.Lflag &^= unix.ECHO
		unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio)
	}
	return &Terminal{master: master, slave: slave, name: name}, nil
}

// Control runs fn on f's descriptor without taking it out of the runtime's
// poller, which os.File.Fd would do (it makes the descriptor blocking).
func Control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Close closes both sides; the pump of its output then ends.
func (t *Terminal) Close() error {
	t.slave.Close()
	return t.master.Close()
}
