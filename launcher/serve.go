package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sdm-hpc/sdm/connect"
)

// ErrSessionsFailed is the outcome of Serve when a session failed; each
// failure was logged as it happened.
var ErrSessionsFailed = errors.New("some sessions failed (above)")

// Matches says whether id is the request named by want (its start will do).
func Matches(id, want string) bool { return strings.HasPrefix(id, want) }

// RejectNamed rejects the request named by want (Matches) once it comes.
func (l *Listener) RejectNamed(ctx context.Context, want, reason string) error {
	for {
		reqs, err := l.Next(ctx)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if Matches(r.ID, want) {
				if err := l.Reject(r, reason); err != nil {
					return err
				}
				l.logger().Printf("rejected %s", r)
				return nil
			}
		}
	}
}

// Serve debugs the requests that pick accepts with debug, one session
// after another, until max sessions ran (0: no limit). A failed session
// is logged and the next request is served all the same.
func (l *Listener) Serve(ctx context.Context, max int, pick func(*connect.Request) (bool, error), debug func(context.Context, *connect.Request) error) error {
	var failed error
	for sessions := 0; max == 0 || sessions < max; {
		reqs, err := l.Next(ctx)
		if err != nil {
			return errors.Join(failed, err)
		}
		for _, r := range reqs {
			if yes, err := pick(r); err != nil {
				return errors.Join(failed, err)
			} else if !yes {
				continue
			}
			sessions++
			if err := debug(ctx, r); err != nil {
				l.logger().Printf("request %s: %v", r.ID, err)
				failed = ErrSessionsFailed
			}
			if max != 0 && sessions >= max {
				break
			}
		}
	}
	return failed
}

// Asker asks at a terminal, in and out, whether to debug each request (a
// pick for Serve); a no is the job's answer.
func (l *Listener) Asker(in io.Reader, out io.Writer) func(*connect.Request) (bool, error) {
	lines := bufio.NewReader(in)
	return func(r *connect.Request) (bool, error) {
		fmt.Fprintf(out, "sdm: a job asks to be debugged:\n  %s\naccept? [y/n] ", r)
		line, err := lines.ReadString('\n')
		if err != nil {
			return false, fmt.Errorf("no answer: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true, nil
		}
		host, _ := os.Hostname()
		if err := l.Reject(r, "rejected at "+host); err != nil {
			fmt.Fprintln(out, "sdm:", err)
		}
		return false, nil
	}
}
