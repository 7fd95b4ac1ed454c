package dap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	godap "github.com/google/go-dap"
)

// maxContent bounds a message's body: larger is a client's mistake, which
// is answered, not allocated.
const maxContent = 16 << 20

// maxHeaderLine bounds a header line, so that a client sending no line
// ends does not grow the reader without limit.
const maxHeaderLine = 4096

const lengthHeader = "Content-Length:"

// frameError is a message that could not be read; the stream goes on at
// the next header.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

// conn reads and writes DAP's base protocol: a Content-Length header, a
// blank line, then a JSON body. A malformed header is skipped up to the
// next "Content-Length:", so one bad message costs one error response,
// not the session.
type conn struct {
	r   *bufio.Reader
	wmu sync.Mutex
	w   io.Writer
	seq int // of the last message written
}

func newConn(r io.Reader, w io.Writer) *conn {
	return &conn{r: bufio.NewReaderSize(r, 64<<10), w: w}
}

// read returns the next message's body: a *frameError for a message that
// was malformed, any other error for the end of the stream.
func (c *conn) read() ([]byte, error) {
	length := -1
	for {
		line, err := c.line()
		if err != nil {
			return nil, err
		}
		if line == "" {
			if length >= 0 {
				break
			}
			continue // blank lines between messages
		}
		if i := strings.Index(line, lengthHeader); i > 0 {
			// The rest of a message whose length was too short, then
			// the next header on the same line.
			length = -1
			line = line[i:]
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &frameError{fmt.Sprintf("not a header: %q", clip(line))}
		}
		if !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue // other headers (Content-Type) say nothing we need
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return nil, &frameError{fmt.Sprintf("Content-Length %q is not a length", clip(value))}
		}
		if n > maxContent {
			return nil, &frameError{fmt.Sprintf("Content-Length %d is over the limit of %d bytes", n, maxContent)}
		}
		length = n
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// line reads one header line without its line end, at most maxHeaderLine
// bytes of it.
func (c *conn) line() (string, error) {
	var b bytes.Buffer
	for {
		part, err := c.r.ReadSlice('\n')
		if b.Len() < maxHeaderLine {
			b.Write(part[:min(len(part), maxHeaderLine-b.Len())])
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if err == io.EOF && b.Len() > 0 {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
	}
	return strings.TrimRight(b.String(), "\r\n"), nil
}

// clip shortens what a client sent for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// write sends a message, numbering it.
func (c *conn) write(m godap.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.seq++
	switch m := m.(type) {
	case godap.ResponseMessage:
		r := m.GetResponse()
		r.Seq, r.Type = c.seq, "response"
	case godap.EventMessage:
		e := m.GetEvent()
		e.Seq, e.Type = c.seq, "event"
	}
	return godap.WriteProtocolMessage(c.w, m)
}
