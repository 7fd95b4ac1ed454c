package testenv

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// Flood opens silent connections to addr that never send a byte, and
// slow ones that trickle a preamble a byte every 50 ms (slowloris), each
// slow one opened again when the other end drops it, until the test ends:
// the keyless peers an owner's connection must get past.
func Flood(t testing.TB, addr string, silent, slow int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var conns []net.Conn
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	for range silent {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("silent connection %d to %s: %v", len(conns), addr, err)
		}
		conns = append(conns, c)
	}
	preamble := []byte("SDM\x00\x00\x01 and so on, slowly")
	for range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := new(net.Dialer).DialContext(ctx, "tcp", addr)
				if err != nil {
					return
				}
				trickle(ctx, c, preamble)
				c.Close()
			}
		}()
	}
}

// trickle writes b to c a byte every 50 ms, until c or ctx ends.
func trickle(ctx context.Context, c net.Conn, b []byte) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := range b {
		if _, err := c.Write(b[i : i+1]); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
