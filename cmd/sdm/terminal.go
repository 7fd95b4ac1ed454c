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
	case "submitted":
		text = fmt.Sprintf("submitted %d ranks", step.Total)
	case "published":
		text = fmt.Sprintf("published %d/%d", step.Done, step.Total)
	case "connected":
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
// history and completion, and ^C interrupts the command running (a long
// wait, say) instead of the session.
func interactive(ctx context.Context, con *console.Console) error {
	if !isTerminal(os.Stdin) {
		// Commands piped in are a script like --batch.
		return con.RunScript(ctx, os.Stdin, "stdin", func(err error) { fmt.Fprintln(os.Stderr, "sdm:", err) })
	}
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
	for {
		text, err := line.Prompt("(sdm) ")
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			continue // ^C at the prompt clears the line
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		if text != "" {
			line.AppendHistory(text)
		}
		if err := execInterruptible(ctx, con, text); err != nil {
			if errors.Is(err, console.ErrQuit) {
				return err
			}
			fmt.Fprintln(os.Stderr, "error:", err)
		}
	}
}

// execInterruptible runs one command; a ^C meanwhile cancels it.
func execInterruptible(ctx context.Context, con *console.Console, text string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	return con.Exec(ctx, text)
}

// historyFile is ~/.sdm_history, or a file in the temporary directory for
// a user without a home.
func historyFile() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".sdm_history")
	}
	return filepath.Join(os.TempDir(), ".sdm_history")
}
