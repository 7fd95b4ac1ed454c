package routing

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrIncomplete is wrapped by errors about a routing file that holds fewer
// entries than its header announces, or nothing at all. Such a file is
// probably still being written; test with errors.Is.
var ErrIncomplete = errors.New("routing file incomplete")

// incompleteError keeps the detail apart from the file name so that Wait can
// say what is missing without repeating the name it already gave.
type incompleteError struct {
	name   string
	detail string
}

func (e *incompleteError) Error() string { return e.name + ": " + e.detail }

func (e *incompleteError) Unwrap() error { return ErrIncomplete }

// lineError formats the name:line: prefix that editors and users expect.
func lineError(name string, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
}

// quote shows user-supplied text in a message, bounded so that a line of
// garbage cannot produce a megabyte-long error.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "..."
	}
	return strconv.Quote(string(b))
}
