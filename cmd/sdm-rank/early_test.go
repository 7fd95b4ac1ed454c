//go:build cgo

package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdm-hpc/sdm/member"
)

// earlyAgrees checks that the start in C takes a start only if decide
// takes it, with the same plan, and says whether it took it.
func earlyAgrees(t *testing.T, args, vars []string) bool {
	t.Helper()
	c, ok := earlyDecide(args, vars)
	if !ok {
		return false
	}
	p, why := decide(args, env(vars...))
	p.debuggerPath = "" // Go's to use, once a debugger is asked for
	if why != "" || p != c {
		t.Errorf("%q %q: the start in C took it as %+v; decide: %+v %q", args, vars, c, p, why)
	}
	return true
}

// The start in C takes members' starts as decide does, and leaves to Go
// what it does not read as surely as Go would: octal and hexadecimal
// numbers, fractions of durations, routing files out of order or not
// written to their end.
func TestEarlyDecidesAsGo(t *testing.T) {
	base, cases := starts(t)
	for _, c := range cases {
		args := append(append([]string{}, base...), c.args...)
		if took := earlyAgrees(t, args, c.env); took != (c.why == "") {
			t.Errorf("%q %q: taken in C %v, want %v", c.args, c.env, took, c.why == "")
		}
	}
	write := func(name, text string) string {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return "--routing_file=" + path
	}
	plain := write("plain", "3\n0 a 1\n1 a 2\n2 b 3\n")
	for _, c := range []struct {
		args  []string
		env   []string
		early bool // taken in C
	}{
		{args: []string{plain, "--server=1", "--timeout=1m30s", "--fanout=2", "--master=false", "--debugger=gdb"}, early: true},
		{args: []string{plain, "--server=1", "--timeout", "250ms", "--event_window=1h", "--port=7", "--proxy", "x"}, early: true},
		{args: []string{plain}, env: []string{"OMPI_COMM_WORLD_RANK=", "PMI_RANK= 1 ", "SLURM_PROCID=2"}, early: true},
		{args: []string{plain}, env: []string{"PMI_RANK=1", "PMI_RANK=2"}, early: true},
		{args: []string{plain}, env: []string{"PMI_RANK=+1"}},
		{args: []string{plain, "--server=0x1"}},
		{args: []string{plain, "--server=1", "--timeout=1.5s"}},
		{args: []string{plain, "--server=1", "--timeout=0s"}},
		{args: []string{plain, "--server=1", "--fanout=1"}},
		{args: []string{plain, "--server=1", "--master=yes"}},
		{args: []string{plain, "--server=-2"}},
		{args: []string{plain, "--server=3"}},
		{args: []string{write("crlf", "3\r\n0\ta\t1\r\n1  a 2 \r\n2 b 3\r\n\r\n  \n"), "--server=1"}, early: true},
		{args: []string{write("later", "3\n0 b 1\n1 a 2\n2 a 3\n"), "--server=2"}, early: true},
		{args: []string{write("order", "3\n1 a 2\n0 a 1\n2 b 3\n"), "--server=1"}},
		{args: []string{write("cut", "3\n0 a 1\n1 a 2\n2 b 3"), "--server=1"}},
		{args: []string{write("short", "3\n0 a 1\n1 a 2\n"), "--server=1"}},
		{args: []string{write("long", "2\n0 a 1\n1 a 2\n2 b 3\n"), "--server=1"}},
		{args: []string{write("gap", "3\n0 a 1\n\n1 a 2\n2 b 3\n"), "--server=1"}},
		{args: []string{write("port", "3\n0 a 1\n1 a 65536\n2 b 3\n"), "--server=1"}},
		{args: []string{write("host", "3\n0 a 1\n1 \x7f 2\n2 b 3\n"), "--server=1"}},
		{args: []string{write("utf8", "3\n0 h\u00e9 1\n1 h\u00e9 2\n2 b 3\n"), "--server=1"}},
	} {
		args := append([]string{"--key-file=/k", "--members=hand"}, c.args...)
		if took := earlyAgrees(t, args, c.env); took != c.early {
			t.Errorf("%q %q: taken in C %v, want %v", c.args, c.env, took, c.early)
		}
	}
}

// Whatever the arguments, environment and routing file, the start in C
// takes no start that decide does not, nor plans one otherwise.
func FuzzEarlyDecide(f *testing.F) {
	f.Add("--server=1\x00--debugger=sim", "", "3\n0 a 1\n1 a 2\n2 b 3\n")
	f.Add("--timeout\x001m\x00--fanout=2", "PMI_RANK=1", "2\r\n0 a 1\r\n1 a 2\r\n")
	f.Add("--server=2", "SDM_LISTEN_FD=9", "3\n0 b 1\n1 a 2\n2 a 3\n\n")
	f.Add("--server=1\x00--gdb\x00lazy", "SLURM_PROCID= 1", "3\n0\ta\t1\n1 a 2\n2 b 3\n")
	f.Fuzz(func(t *testing.T, args, vars, routes string) {
		path := filepath.Join(t.TempDir(), "routes")
		if err := os.WriteFile(path, []byte(routes), 0o644); err != nil {
			t.Fatal(err)
		}
		list := []string{"--key-file=/k", "--members=hand", "--routing_file=" + path}
		if args != "" {
			list = append(list, strings.Split(args, "\x00")...)
		}
		var env []string
		if vars != "" {
			env = strings.Split(vars, "\x00")
		}
		for _, s := range append(list, env...) {
			if strings.IndexByte(s, 0) >= 0 {
				return // no argument or variable holds a NUL
			}
		}
		earlyAgrees(t, list, env)
	})
}

// The start in C names the leader's socket as member.Address does.
func TestEarlyAddress(t *testing.T) {
	for i := range 100 {
		var key [32]byte
		rand.Read(key[:])
		leader := i * 9973
		if got, want := earlyAddress(key, leader), member.Address(key, leader); got != want {
			t.Fatalf("key %x, server %d: %q, want %q", key, leader, got, want)
		}
	}
}
