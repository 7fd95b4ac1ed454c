package routing

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// pollInterval is how often Wait re-reads the file without being told to.
// inotify does not see writes made on other NFS clients, which is where the
// launcher usually runs, so the poll is what guarantees progress there.
var pollInterval = time.Second

// useInotify is false to make Wait behave as on a system without inotify.
var useInotify = true

// beforeBlock, when set, is called each time Wait is about to block, with the
// reason the file was not yet usable. Tests use it to act while Wait is
// known to be waiting, instead of sleeping and hoping.
var beforeBlock func(error)

// Wait blocks until path holds a complete table, ctx ends, or the file turns
// out malformed. A malformed complete file is returned as an error at once;
// an incomplete or missing one keeps Wait waiting.
//
// Wait reacts within milliseconds to a file created, renamed into place or
// written on the local machine, and within a second to one written on
// another NFS client. The file is best written with Write. A writer that
// fills the file in place should write the last entry line whole, since a
// complete-looking last line is taken as it is.
//
// When ctx ends first, the error names the file and says what is missing,
// as in "waiting for routing file /x/routes: context deadline exceeded: has
// 5 of 8 entries". It matches both the context's error and the last read
// error (fs.ErrNotExist or ErrIncomplete) under errors.Is.
func Wait(ctx context.Context, path string) (*Table, error) {
	if path == "" {
		// os.Open("") fails with "not exist", which would wait forever.
		return nil, errors.New("routing: waiting for routing file: empty path")
	}
	var t *Table
	err := WaitFor(ctx, filepath.Dir(path), filepath.Base(path), "routing file "+path, func() (err error) {
		t, err = ReadFile(path)
		return err
	})
	return t, err
}

// WaitFor calls try until it succeeds, fails for a reason other than a
// missing or incomplete file (fs.ErrNotExist, ErrIncomplete), or ctx ends.
// It tries again whenever something happens to name in dir (any file when
// name is empty), and at least once a second, for files written on other
// NFS clients. what names the thing waited for in errors. Other files
// that come and go by rename (requests, answers) are waited for with it
// as routing files are.
func WaitFor(ctx context.Context, dir, name, what string, try func() error) error {
	// Mostly the file is there already, whole: every server of a host
	// would set up a watch it never uses.
	if err := try(); err == nil || !waitable(err) {
		return err
	}
	// Watch before trying again, so that a file arriving in between
	// cannot be missed.
	var n notifier = pollNotifier{}
	if useInotify {
		if in, err := newInotify(ctx, dir, name); err == nil {
			n = in
		}
	}
	defer n.close()
	for {
		err := try()
		if err == nil {
			return nil
		}
		if !waitable(err) {
			return err
		}
		if ctx.Err() != nil {
			return &waitError{what: what, cause: context.Cause(ctx), last: err}
		}
		if beforeBlock != nil {
			beforeBlock(err)
		}
		n.wait(ctx, pollInterval)
	}
}

// waitable says whether err is one that waiting may end: the file is
// missing or incomplete.
func waitable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrIncomplete)
}

// notifier tells Wait when to look at the file again.
type notifier interface {
	// wait returns when the file may have changed, d has passed, or ctx
	// is done, whichever comes first.
	wait(ctx context.Context, d time.Duration)
	close()
}

// pollNotifier is the fallback where inotify is missing or was refused.
type pollNotifier struct{}

func (pollNotifier) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (pollNotifier) close() {}

type waitError struct {
	what  string // what was waited for
	cause error  // why the context ended
	last  error  // why it was not ready at that point
}

func (e *waitError) Error() string {
	return fmt.Sprintf("waiting for %s: %v: %s", e.what, e.cause, missing(e.last))
}

func (e *waitError) Unwrap() []error { return []error{e.cause, e.last} }

// missing says what was wrong with the file without repeating its name.
func missing(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "file does not exist"
	}
	var ie *incompleteError
	if errors.As(err, &ie) {
		return ie.detail
	}
	return err.Error()
}
