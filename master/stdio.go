package master

import (
	"errors"
	"net"
	"os"
	"time"
)

// Stdio is the master's link to a front end over its standard input and
// output (--proxy=stdio).
func Stdio() net.Conn { return stdioConn{} }

type stdioConn struct{}

func (stdioConn) Read(b []byte) (int, error)  { return os.Stdin.Read(b) }
func (stdioConn) Write(b []byte) (int, error) { return os.Stdout.Write(b) }
func (stdioConn) Close() error {
	return errors.Join(os.Stdin.Close(), os.Stdout.Close())
}
func (stdioConn) LocalAddr() net.Addr  { return stdioAddr{} }
func (stdioConn) RemoteAddr() net.Addr { return stdioAddr{} }
func (stdioConn) SetDeadline(t time.Time) error {
	// Pipes support deadlines; a terminal or file may not, and then the
	// handshake simply has no deadline.
	os.Stdin.SetReadDeadline(t)
	os.Stdout.SetWriteDeadline(t)
	return nil
}
func (c stdioConn) SetReadDeadline(t time.Time) error  { return os.Stdin.SetReadDeadline(t) }
func (c stdioConn) SetWriteDeadline(t time.Time) error { return os.Stdout.SetWriteDeadline(t) }

type stdioAddr struct{}

func (stdioAddr) Network() string { return "stdio" }
func (stdioAddr) String() string  { return "stdio" }
