package console

import (
	"bufio"
	"bytes"
	"io"
)

// MaxLine is the longest command line, in bytes. A longer one is a
// command typed wrong, reported as such, and the session goes on: no
// command needs more, and a script with such a line (a paste gone wrong,
// a binary file) must not end a session that holds a job.
const MaxLine = 64 << 10

// tooLong is the error for a line of n bytes, more than MaxLine.
func tooLong(n int) error {
	return usageError("a line of %d bytes is longer than the %d KiB a command may be", n, MaxLine>>10)
}

// lines reads a script a line at a time, as bufio.Scanner's ScanLines
// would (the end of line, and a carriage return before it, dropped), but
// with lines of any length: of one longer than MaxLine it keeps the
// start only, and counts the rest, where a Scanner would stop for good.
type lines struct {
	r    *bufio.Reader
	text []byte // the line, whole when n <= MaxLine
	n    int    // the line's length in bytes
	err  error  // why reading stopped before the end of input
}

func newLines(r io.Reader) *lines { return &lines{r: bufio.NewReader(r)} }

// scan reads the next line; false at the end of input or on an error
// (err).
func (l *lines) scan() bool {
	l.text, l.n = l.text[:0], 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.n += len(chunk)
		// Room for a whole line of MaxLine bytes with its "\r\n".
		if room := MaxLine + 2 - len(l.text); room > 0 {
			l.text = append(l.text, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && l.n == 0:
			return false
		case err != nil && err != io.EOF:
			l.err = err
			return false
		}
		if bytes.HasSuffix(chunk, []byte("\n")) {
			l.n--
			l.text = bytes.TrimSuffix(l.text, []byte("\n"))
		}
		if len(l.text) == l.n && bytes.HasSuffix(l.text, []byte("\r")) {
			l.n--
			l.text = l.text[:l.n]
		}
		return true
	}
}
