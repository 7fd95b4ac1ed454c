package dap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listen serves DAP clients that connect to addr, one after another,
// until ctx ends. addr must be on the loopback, and a client must be a
// process of this user (its socket's owner, from /proc/net/tcp): a debug
// adapter runs what its client asks, so no one else may be its client.
// ready, when set, is told the address listened on.
func Listen(ctx context.Context, addr string, opts Options, ready func(net.Addr)) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %s: a debug adapter listens on the loopback only (127.0.0.1:PORT): it runs what its client asks", addr)
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if ready != nil {
		ready(ln.Addr())
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := ownedByMe(c); err != nil {
			opts.logf("dap: refused a client: %v", err)
			c.Close()
			continue
		}
		err = Serve(ctx, c, c, opts)
		c.Close()
		if err != nil && ctx.Err() == nil {
			opts.logf("dap: %v", err)
		}
	}
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log.Printf(format, args...)
	}
}

// ownedByMe checks that the peer of a loopback connection is a socket of
// this user.
func ownedByMe(c net.Conn) error {
	peer, local := c.RemoteAddr().(*net.TCPAddr), c.LocalAddr().(*net.TCPAddr)
	uid, err := socketOwner(peer, local)
	if err != nil {
		return err
	}
	if uid != os.Getuid() {
		return fmt.Errorf("a connection from %v belongs to user %d, not to this one (%d)", peer, uid, os.Getuid())
	}
	return nil
}

// socketOwner finds the owner of the socket at local whose peer is remote
// in /proc/net/tcp (IPv4) or tcp6 (IPv6, and IPv4 mapped into it).
func socketOwner(local, remote *net.TCPAddr) (int, error) {
	for _, table := range []struct {
		path string
		size int
	}{{"/proc/net/tcp", net.IPv4len}, {"/proc/net/tcp6", net.IPv6len}} {
		want, ok := procAddr(local, table.size)
		peer, ok2 := procAddr(remote, table.size)
		if !ok || !ok2 {
			continue
		}
		f, err := os.Open(table.path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 7 && strings.EqualFold(fields[1], want) && strings.EqualFold(fields[2], peer) {
				f.Close()
				return strconv.Atoi(fields[7])
			}
		}
		f.Close()
	}
	return 0, errors.New("the client's socket is not in /proc/net/tcp: cannot tell whose it is")
}

// procAddr is an address as /proc/net/tcp writes it, in size bytes: the
// address as host-order 32-bit words in hex (little-endian), then the
// port; false when the address has no such form.
func procAddr(a *net.TCPAddr, size int) (string, bool) {
	ip := a.IP.To16()
	if size == net.IPv4len {
		ip = a.IP.To4()
	}
	if ip == nil {
		return "", false
	}
	var b strings.Builder
	for i := 0; i+4 <= len(ip); i += 4 {
		fmt.Fprintf(&b, "%02X%02X%02X%02X", ip[i+3], ip[i+2], ip[i+1], ip[i])
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String(), true
}
