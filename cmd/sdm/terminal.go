package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/peterh/liner"
	"golang.org/x/sys/unix"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/launcher"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progress shows how a job comes up on one line of a terminal, rewritten
// in place ("connected 812/1024"), and nothing elsewhere.
type progress struct {
	on    bool
	shown bool
}

func newProgress(terminal bool) *progress { return &progress{on: terminal} }

func (p *progress) show(step launcher.Progress) {
	if !p.on {
		return
	}
	var text string
	switch step.Stage {
	case launcher.StageSubmitted:
		text = fmt.Sprintf("submitted %d ranks", step.Total)
	case launcher.StagePublished:
		text = fmt.Sprintf("published %d/%d", step.Done, step.Total)
	case launcher.StageConnected:
		text = fmt.Sprintf("connected %d/%d", step.Done, step.Total)
	default:
		return
	}
	fmt.Fprintf(os.Stderr, "\r\033[K%s", text)
	p.shown = true
}

// clear removes the progress line once the job is up (or failed).
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}

// interactive reads commands until quit or the end of input; errors are
// shown and the session goes on. On a terminal it offers line editing,
// history and completion. ^C at the prompt halts the running ranks of the
// focus set, as gdb's ^C stops the program (with none running it clears
// the line); ^C during a command ends the command, not the session: a
// wait stops waiting and says which ranks still run, and leaves them so.
// sdm separates running (continue returns at once) from waiting, so ^C
// stops what the console does, and a second ^C, at the prompt, what the
// program does: a ^C never changes the program that the user did not see
// coming, and gdb's "^C stops it" is one key away.
func interactive(ctx context.Context, con *console.Console) error {
	if !isTerminal(os.Stdin) {
		// Commands piped in are a script like --batch.
		return con.RunScript(ctx, os.Stdin, "stdin", func(err error) { fmt.Fprintln(os.Stderr, "sdm:", err) })
	}
	// From here on a ^C never ends sdm: during a command it interrupts
	// that; at the prompt liner reads it as a key.
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	line := liner.NewLiner()
	defer line.Close()
	line.SetCtrlCAborts(true)
	line.SetCompleter(con.Complete)
	history := historyFile()
	if f, err := os.Open(history); err == nil {
		line.ReadHistory(f)
		f.Close()
	}
	defer func() {
		if f, err := os.OpenFile(history, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
			line.WriteHistory(f)
			f.Close()
		}
	}()
	fmt.Fprintln(os.Stderr, "sdm: type help for the commands, quit (or ^D) to end")
	for ctx.Err() == nil {
		text, err := line.Prompt("(sdm) ")
		run := func(ctx context.Context) error { return con.Exec(ctx, text) }
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			run = con.Interrupt
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		case text != "" && len(text) < historyLine:
			line.AppendHistory(text)
		}
		err = interruptible(ctx, intr, run)
		switch {
		case errors.Is(err, console.ErrQuit):
			return err
		case err != nil && !errors.Is(err, console.ErrInterrupted):
			fmt.Fprintln(os.Stderr, "error:", err)
		}
	}
	return ctx.Err()
}

// interruptible runs one command, which a ^C (intr) meanwhile cancels.
// A ^C that comes as the command ends is dropped with it, so that it
// cannot cancel the next one.
func interruptible(ctx context.Context, intr <-chan os.Signal, run func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-intr:
			cancel()
		case <-done:
		}
	}()
	err := run(ctx)
	close(done)
	<-watched
	select {
	case <-intr:
	default:
	}
	return err
}

// historyLine bounds the lines kept in the history: liner reads its
// history back through a 4 KiB buffer, and a longer line would stop the
// reading of it, losing the lines after it.
const historyLine = 4 << 10

// historyFile is ~/.sdm_history, or a file in the temporary directory for
// a user without a home.
func historyFile() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".sdm_history")
	}
	return filepath.Join(os.TempDir(), ".sdm_history")
}
