package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"
	"golang.org/x/sys/unix"
)

// Commands are where a session's commands come from: the -e commands and
// the batch file, in that order, or else In, with line editing when it is
// a terminal. A command typed wrong is reported to Errors and the rest
// still run.
type Commands struct {
	Exprs  []string
	Batch  string
	In     *os.File
	Errors io.Writer
	// Drive, when set, runs the session instead: a program that issues
	// the commands itself (sdm report).
	Drive func(ctx context.Context, con *Console) error
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func (c Commands) complain(err error) { fmt.Fprintln(c.Errors, "sdm:", err) }

// run runs the commands on con.
func (c Commands) run(ctx context.Context, con *Console) error {
	if c.Drive != nil {
		return c.Drive(ctx, con)
	}
	var failed error
	if len(c.Exprs) > 0 {
		err := con.RunScript(ctx, strings.NewReader(strings.Join(c.Exprs, "\n")), "-e", c.complain)
		if err != nil && !errors.Is(err, ErrScriptErrors) {
			return err
		}
		failed = err
	}
	if c.Batch != "" {
		f, err := os.Open(c.Batch)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := con.RunScript(ctx, f, c.Batch, c.complain); err != nil {
			return err
		}
	}
	if len(c.Exprs) > 0 || c.Batch != "" {
		return failed
	}
	if !IsTerminal(c.In) {
		// Commands piped in are a script like --batch.
		return con.RunScript(ctx, c.In, "stdin", c.complain)
	}
	return c.interactive(ctx, con)
}

// interactive reads commands from a terminal until quit or the end of
// input; errors are shown and the session goes on. It offers line
// editing, history and completion. ^C at the prompt halts the running
// ranks of the focus set, as gdb's ^C stops the program (with none
// running it clears the line); ^C during a command ends the command, not
// the session: a wait stops waiting and says which ranks still run, and
// leaves them so. sdm separates running (continue returns at once) from
// waiting, so ^C stops what the console does, and a second ^C, at the
// prompt, what the program does: a ^C never changes the program that the
// user did not see coming, and gdb's "^C stops it" is one key away.
func (c Commands) interactive(ctx context.Context, con *Console) error {
	// From here on a ^C never ends sdm: during a command it interrupts
	// that; at the prompt liner reads it as a key.
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	line := liner.NewLiner()
	defer line.Close()
	line.SetCtrlCAborts(true)
	line.SetCompleter(con.Complete)
	// Tab lists the candidates, as a shell does, rather than putting each
	// in the line in turn.
	line.SetTabCompletionStyle(liner.TabPrints)
	con.mu.Lock()
	con.ask = func(question string) bool {
		answer, err := line.Prompt(question + " (y or n) ")
		return err == nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y")
	}
	con.mu.Unlock()
	defer keepHistory(line)()
	fmt.Fprintln(c.Errors, "sdm: type help for the commands, quit (or ^D) to end")
	for ctx.Err() == nil {
		con.prompting(prompt)
		text, err := line.Prompt(prompt)
		con.prompting("")
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
		case errors.Is(err, ErrQuit):
			return err
		case err != nil && !errors.Is(err, ErrInterrupted) && !con.opts.JSON: // under --json the reply says it
			fmt.Fprintln(c.Errors, "error:", err)
		}
	}
	return ctx.Err()
}

// prompt is the console's prompt at the terminal.
const prompt = "(sdm) "

// keepHistory reads the history file into line, and returns what writes
// it back.
func keepHistory(line *liner.State) (save func()) {
	history := historyFile()
	if f, err := os.Open(history); err == nil {
		line.ReadHistory(f)
		f.Close()
	}
	return func() {
		if f, err := os.OpenFile(history, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
			line.WriteHistory(f)
			f.Close()
		}
	}
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
