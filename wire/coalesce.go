package wire

import (
	"encoding/binary"
	"net"
)

// yamux writes every data frame as two writes, its 12-byte header and then
// the body. On a socket with TCP_NODELAY that is two system calls and two
// segments per message, which at a thousand servers is a good part of a
// broadcast's cost. coalescedConn holds back a data-frame header and sends
// it together with the body that yamux's send loop, its only writer,
// always writes next.
type coalescedConn struct {
	net.Conn
	held []byte // a data-frame header waiting for its body
	buf  []byte
}

// yamux frame header: version, type, flags (2), stream id (4), length (4).
const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
)

func (c *coalescedConn) Write(p []byte) (int, error) {
	if c.held == nil {
		if len(p) == yamuxHeaderSize && p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:]) > 0 {
			c.held = append(c.buf[:0], p...)
			return len(p), nil
		}
		return c.Conn.Write(p)
	}
	c.buf = append(c.held, p...)
	c.held = nil
	n, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return max(n-yamuxHeaderSize, 0), err
}
