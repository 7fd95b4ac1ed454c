// Package console is the command line of the front end: it reads commands
// such as `[0-3] where`, sends them through a client.Session to the rank
// set given (or the focus set), and prints the merged answers and the
// events of the tree, as text (one line per distinct answer, rank set
// first) or as JSON (one object per line).
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// ErrQuit is returned by Exec for the quit command.
var ErrQuit = errors.New("quit")

// Options tune a Console.
type Options struct {
	JSON    bool          // print JSON objects instead of text
	Timeout time.Duration // how long a command waits for its ranks (default 30 s)
}

// Console runs commands against one session and prints what comes back.
type Console struct {
	s    *client.Session
	opts Options

	mu    sync.Mutex // one printed line at a time
	out   io.Writer
	focus wire.RankSet
}

// New returns a console on s printing to out, focused on all ranks.
func New(s *client.Session, out io.Writer, opts Options) *Console {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	return &Console{s: s, opts: opts, out: out, focus: wire.All(s.Size())}
}

// PrintEvents prints the session's events until the session has ended and
// all were printed, or ctx is done.
func (c *Console) PrintEvents(ctx context.Context) {
	for {
		ev, err := c.s.NextEvent(ctx)
		if err != nil {
			return
		}
		if ev.Op != wire.EventConnected {
			c.printEvent(ev)
		}
	}
}

// RunScript executes the commands read from r, one per line; blank lines
// and lines starting with # are skipped. It stops at the first command
// that fails, naming name:line, and returns ErrQuit after a quit.
func (c *Console) RunScript(ctx context.Context, r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if err := c.Exec(ctx, sc.Text()); err != nil {
			if errors.Is(err, ErrQuit) {
				return err
			}
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	return sc.Err()
}

// Exec runs one command line.
func (c *Console) Exec(ctx context.Context, line string) error {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	ranks, rest, err := c.prefix(line)
	if err != nil {
		return err
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return fmt.Errorf("%q: a rank set needs a command after it", line)
	}
	cmd, ok := lookup(fields[0])
	if !ok {
		return fmt.Errorf("unknown command %q (try help)", fields[0])
	}
	return cmd.run(ctx, c, ranks, fields[1:])
}

// prefix splits an optional leading [SET] off line; without one the focus
// set applies.
func (c *Console) prefix(line string) (wire.RankSet, string, error) {
	if !strings.HasPrefix(line, "[") {
		return c.focus, line, nil
	}
	end := strings.IndexByte(line, ']')
	if end < 0 {
		return wire.RankSet{}, "", fmt.Errorf("%q: rank set has no closing ]", line)
	}
	ranks, err := c.parseSet(line[1:end])
	return ranks, line[end+1:], err
}

// parseSet reads a rank set, or "all".
func (c *Console) parseSet(text string) (wire.RankSet, error) {
	if strings.TrimSpace(text) == "all" {
		return wire.All(c.s.Size()), nil
	}
	ranks, err := wire.ParseRankSet(text)
	if err != nil {
		return ranks, err
	}
	if outside := ranks.Minus(wire.All(c.s.Size())); !outside.Empty() {
		return ranks, fmt.Errorf("ranks %v are not in this job (ranks 0-%d)", outside, c.s.Size()-1)
	}
	return ranks, nil
}

// send runs op on ranks and prints every answer.
func (c *Console) send(ctx context.Context, ranks wire.RankSet, op string, body []byte) ([]wire.Group, error) {
	groups, err := c.s.Command(ctx, ranks, op, body, c.opts.Timeout)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		c.printReply(op, g)
	}
	return groups, nil
}
