package integration

import (
	"bufio"
	"fmt"
	"os"
	"testing"
	"time"
)

// A server of a job of 500k ranks parses a routing file of megabytes and
// groups its hosts: a host's member keeps none of it, and gives the
// memory back once it has joined and been quiet, before any command (a
// host of 128 such servers would otherwise hold gigabytes through the
// whole bring-up and after it).
func TestMemberLetsGoOfALargeStart(t *testing.T) {
	const n = 500_000
	s := newSession(t, 2)
	// The same two servers, in a table of n: the others never come.
	leaderPort, memberPort := freePort(t), freePort(t)
	f, err := os.Create(s.routes)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, n)
	fmt.Fprintln(w, 0, "127.0.0.1", leaderPort)
	fmt.Fprintln(w, 1, "127.0.0.1", memberPort)
	for i := 2; i < n; i++ {
		fmt.Fprintln(w, i, "127.0.0.1", 20000+i%40000)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	leader := s.startServer(append(s.serverArgs(), "--debug"), 0)
	member := s.startServer(s.serverArgs(), 1)
	deadline := time.After(60 * time.Second)
	for leader.joined() < 1 {
		select {
		case <-anyOutput:
		case <-deadline:
			t.Fatalf("server 1 did not join server 0 within 60 s:\n%s\n%s", leader.out.String(), member.out.String())
		}
	}
	pid := member.cmd.Process.Pid
	const small = 8 << 10 // kB
	if kb := rollupKB(t, pid, "Anonymous:"); kb < 2*small {
		t.Fatalf("server 1 has %d kB of anonymous memory as it joins: the start left too little for this test", kb)
	}
	// It lets go at its first quiet spell (2 s).
	var kb int
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		if kb = rollupKB(t, pid, "Anonymous:"); kb < small {
			return
		}
		select {
		case <-member.done:
			t.Fatalf("server 1 ended: %v\n%s", member.err, member.out.String())
		case <-time.After(100 * time.Millisecond): // the next look at /proc; the memory changes without an event to wait on
		}
	}
	t.Errorf("server 1 still has %d kB of anonymous memory 20 s after it joined, want under %d", kb, small)
}
