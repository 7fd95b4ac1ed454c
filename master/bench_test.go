package master

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/testkit/testenv"
	"github.com/sdm-hpc/sdm/wire"
)

// BenchmarkOwnerUnderFlood measures how long the owner takes to be
// admitted on a master's session port (dial, handshake, link) while 2,000
// silent and 200 slowloris peers without the key are connected to it.
func BenchmarkOwnerUnderFlood(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	cfg := wire.LinkConfig{Key: wire.Key{7}}
	gate := Options{Link: cfg}.frontEnds(ln)
	defer gate.Close()
	testenv.Flood(b, ln.Addr().String(), 2000, 200)
	var worst time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		owner, err := new(net.Dialer).DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		mine := make(chan *wire.Link, 1)
		go func() {
			l, err := wire.NewLink(owner, wire.Ends{Kind: wire.FrontEndLink, Upper: true, Initiator: true}, cfg)
			if err != nil {
				b.Error(err)
			}
			mine <- l
		}()
		link, err := gate.Next(ctx)
		cancel()
		if err != nil {
			b.Fatalf("the owner was not admitted: %v", err)
		}
		l := <-mine
		worst = max(worst, time.Since(start))
		link.Close()
		if l != nil {
			l.Close()
		}
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
}
