package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// DefaultMaxFrame bounds one message on the wire. Replies are merged on the
// way up, so even a million ranks' stacks stay well below it; the bound is
// what keeps a confused or hostile peer from making us allocate gigabytes.
const DefaultMaxFrame = 16 << 20

// ErrFrameTooLarge is returned when a frame exceeds the codec's limit.
var ErrFrameTooLarge = errors.New("frame too large")

// Codec reads and writes length-prefixed msgpack messages on a stream.
// Read must be called from one goroutine; Write is safe for concurrent use.
type Codec struct {
	r    *bufio.Reader
	max  int
	dec  *msgpack.Decoder
	body bytes.Reader

	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// NewCodec returns a codec on rw whose frames may be at most maxFrame bytes
// (DefaultMaxFrame when maxFrame <= 0).
func NewCodec(rw io.ReadWriter, maxFrame int) *Codec {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	c := &Codec{r: bufio.NewReader(rw), w: rw, max: maxFrame, dec: msgpack.NewDecoder(nil)}
	c.enc = msgpack.NewEncoder(&c.buf)
	return c
}

// Write sends m as one frame. The length and the body go out in a single
// write so that no Nagle or delayed-ACK stall sits between them.
func (c *Codec) Write(m *Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Room for the length first, filled in once the body is encoded.
	c.buf.Reset()
	c.buf.Write([]byte{0, 0, 0, 0})
	if err := m.EncodeMsgpack(c.enc); err != nil {
		return fmt.Errorf("encode %s %s: %w", m.Kind, m.Op, err)
	}
	frame := c.buf.Bytes()
	size := len(frame) - 4
	if size > c.max {
		return fmt.Errorf("%w: %s %s is %d bytes, limit %d", ErrFrameTooLarge, m.Kind, m.Op, size, c.max)
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	_, err := c.w.Write(frame)
	if c.buf.Cap() > 64<<10 {
		c.buf = bytes.Buffer{} // do not keep a huge buffer for one big reply
	}
	if err != nil {
		return writeError{err}
	}
	return nil
}

// ErrStreamCut is wrapped by a write that failed once its frame was on
// its way: part of it may have gone out, so the stream cannot carry
// another, and a Link closes. Whether the peer got the frame is unknown.
var ErrStreamCut = errors.New("stream cut during a write")

// writeError is a write that failed once the frame was on its way.
type writeError struct{ error }

func (e writeError) Unwrap() error { return e.error }

// Is says that the write cut the stream, while its message stays the
// underlying error's.
func (e writeError) Is(target error) bool { return target == ErrStreamCut }

// Read returns the next message. Malformed or oversized frames are errors
// that wrap ErrMessage or ErrFrameTooLarge; the stream is unusable after one.
func (c *Codec) Read() (*Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(c.max) {
		return nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, n, c.max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, fmt.Errorf("%w: frame cut short: %v", ErrMessage, err)
	}
	return decodeMessage(c.dec, &c.body, body)
}

// DecodeMessage decodes and validates one frame body.
func DecodeMessage(body []byte) (*Message, error) {
	return decodeMessage(msgpack.NewDecoder(nil), new(bytes.Reader), body)
}

func decodeMessage(dec *msgpack.Decoder, r *bytes.Reader, body []byte) (*Message, error) {
	if _, err := checkBounds(body); err != nil {
		return nil, err
	}
	r.Reset(body)
	dec.Reset(r)
	m := new(Message)
	if err := m.DecodeMsgpack(dec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMessage, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the message", ErrMessage, r.Len())
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}
