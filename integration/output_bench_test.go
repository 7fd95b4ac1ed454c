package integration

import (
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFlood measures program output end to end: two ranks of
// examples/flood under gdb each print 100 MB of 100-byte lines to a
// console that reads at full speed, and to one that reads 20 MB a
// second. It reports the throughput the console saw (the bytes over the
// time from the start of sdm to the last line: start-up, a second or so,
// included), the time to the end of the session, and the peak resident
// sets of the front end and of the larger server.
func BenchmarkFlood(b *testing.B) {
	const mb, length = 100, 100
	for _, rate := range []int{0, 20 << 20} {
		name := "reader=full"
		if rate > 0 {
			name = fmt.Sprintf("reader=%dMBps", rate>>20)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				lines := newFloodLines(length)
				start := time.Now()
				var last time.Time
				peak, _ := floodRun(b, slowReader{rate: rate, lines: make(chan string, 1024)}, "run\nwait 600\nquit\n",
					func(line string, _ io.Writer) {
						if lines.add(line) {
							last = time.Now()
						}
					}, strconv.Itoa(mb), strconv.Itoa(length))
				if want := int64(2 * mb * 1000 * 1000); lines.bytes != want {
					b.Errorf("%d bytes of output arrived, want %d", lines.bytes, want)
				}
				if len(lines.bad) > 0 || len(lines.cut) > 0 {
					b.Errorf("%d lines came split or out of order: %v", len(lines.bad)+len(lines.cut), lines.bad)
				}
				// Logged too: a run that loses output fails, and reports no metrics.
				b.Logf("%.2f MB/s, %.1f s, front end %d MiB, server %d MiB", float64(lines.bytes)/1e6/last.Sub(start).Seconds(),
					time.Since(start).Seconds(), peak.front>>20, peak.server>>20)
				b.ReportMetric(float64(lines.bytes)/1e6/last.Sub(start).Seconds(), "MB/s")
				b.ReportMetric(time.Since(start).Seconds(), "s/run")
				b.ReportMetric(float64(peak.front)/(1<<20), "MiB-front")
				b.ReportMetric(float64(peak.server)/(1<<20), "MiB-server")
			}
		})
	}
}
