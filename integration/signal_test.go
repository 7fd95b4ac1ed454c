package integration

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/internal/testenv"
)

// SIGTERM stops a master and its servers promptly, even when the front end
// never came (PTP's servers ignored it), and they exit cleanly.
func TestSIGTERMStopsEveryone(t *testing.T) {
	const n = 3
	s := newSession(t, n)
	master := start(t, testenv.Command(t, sdmBin, "--master", "--port="+strconv.Itoa(freePort(t)),
		"--routing_file="+s.routes, "--key-file="+s.keyFile, "--debug"))
	procs := []*proc{master}
	for i := 0; i < n; i++ {
		procs = append(procs, s.startServer(append(s.serverArgs(), "--debug"), i))
	}
	// The tree is up once its parents have logged every server joining.
	joined := func() int {
		total := 0
		for _, p := range procs {
			total += p.joined()
		}
		return total
	}
	deadline := time.After(10 * time.Second)
	for joined() < n {
		select {
		case <-anyOutput:
		case <-deadline:
			t.Fatalf("%d of %d servers joined within 10s", joined(), n)
		}
	}
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("%s after SIGTERM: %v", p.cmd.Args[0], p.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("still running 5s after SIGTERM")
		}
	}
}
