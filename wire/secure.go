package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/flynn/noise"
)

// ErrTampered is wrapped when a record of an established link fails its
// integrity check: something on the path altered, dropped, reordered or
// forged bytes. The link cannot go on after one.
var ErrTampered = errors.New("link integrity check failed")

// Noise bounds a transport message to 65535 bytes, 16 of them the tag.
const (
	maxRecord = 65535
	tagSize   = 16
	maxPlain  = maxRecord - tagSize
)

// secureConn carries a link's bytes after the handshake, as records of a
// 2-byte length and a Noise transport message (AES-GCM with a counter for
// nonce), so that every byte is read only by the other end and any
// change on the way is noticed at the next record.
type secureConn struct {
	net.Conn
	r        *bufio.Reader
	recv     *noise.CipherState
	rbuf     []byte
	plain    []byte // decrypted and not read yet
	received uint64 // records received, for errors
	failed   atomic.Pointer[error]
	heard    atomic.Int64 // when the last record arrived (clock)

	wmu  sync.Mutex
	send *noise.CipherState
	wbuf []byte
}

func newSecureConn(conn net.Conn, recv, send *noise.CipherState) *secureConn {
	c := &secureConn{Conn: conn, r: bufio.NewReaderSize(conn, 2+maxRecord), recv: recv, send: send}
	c.heard.Store(int64(clock()))
	return c
}

// Read returns plaintext from the next records. A record that does not
// decrypt ends the connection with an error wrapping ErrTampered.
func (c *secureConn) Read(p []byte) (int, error) {
	for len(c.plain) == 0 {
		if _, err := c.readRecord(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.plain)
	c.plain = c.plain[n:]
	return n, nil
}

// readRecord reads and decrypts one record into c.plain.
func (c *secureConn) readRecord() (int, error) {
	if err := c.failed.Load(); err != nil {
		return 0, *err
	}
	var hdr [2]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n < tagSize {
		return 0, c.fail(fmt.Errorf("%w: record %d is %d bytes, shorter than its tag", ErrTampered, c.received+1, n))
	}
	if cap(c.rbuf) < n {
		// Grown to the largest record seen: most links carry small ones.
		c.rbuf = make([]byte, max(n, 4<<10))
	}
	buf := c.rbuf[:n]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, err
	}
	plain, err := c.recv.Decrypt(buf[:0], nil, buf)
	if err != nil {
		return 0, c.fail(fmt.Errorf("%w: record %d from %s was altered or forged on the way", ErrTampered, c.received+1, c.RemoteAddr()))
	}
	c.received++
	c.heard.Store(int64(clock()))
	c.plain = plain
	return len(plain), nil
}

// fail records why the link cannot go on, for every later read and for
// Link.Err, and closes the connection so that the peer learns at once.
func (c *secureConn) fail(err error) error {
	if c.failed.CompareAndSwap(nil, &err) {
		c.Conn.Close()
	}
	return *c.failed.Load()
}

// Err says why the connection failed its integrity check, or nil.
func (c *secureConn) Err() error {
	if err := c.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// Write encrypts p into as many records as it takes and sends them in one
// write.
func (c *secureConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.writeRecords(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeRecords sends p as records; an empty p is one empty record.
func (c *secureConn) writeRecords(p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf := c.wbuf[:0]
	for first := true; first || len(p) > 0; first = false {
		chunk := p[:min(len(p), maxPlain)]
		p = p[len(chunk):]
		at := len(buf)
		buf = append(buf, 0, 0)
		var err error
		if buf, err = c.send.Encrypt(buf, nil, chunk); err != nil {
			return err
		}
		binary.BigEndian.PutUint16(buf[at:], uint16(len(buf)-at-2))
	}
	_, err := c.Conn.Write(buf)
	if cap(buf) <= 4*(2+maxRecord) {
		c.wbuf = buf[:0] // keep a buffer of everyday size, not a huge one
	}
	return err
}
