package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// routes writes a routing file of servers on hosts: hosts[i] is server
// i's host.
func routes(t *testing.T, hosts ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(hosts)) + "\n")
	for i, h := range hosts {
		b.WriteString(strconv.Itoa(i) + " " + h + " " + strconv.Itoa(20000+i) + "\n")
	}
	path := filepath.Join(t.TempDir(), "routes")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// env looks variables up in vars as the environment holds them, as
// NAME=value, the first setting winning.
func env(vars ...string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range vars {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

// startCase is a start of sdm-rank: base's arguments and args, in env.
type startCase struct {
	args   []string
	env    []string
	leader int    // of a member's plan
	why    string // else
}

// starts are starts of the servers of a routing file of five servers
// on two hosts, n1's 0-2 and n2's 3-4, with a key file, that the job's
// plan has hand their ranks over: the members' and sdm-server's.
func starts(t *testing.T) (base []string, cases []startCase) {
	file := routes(t, "n1", "n1", "n1", "n2", "n2")
	return []string{"--routing_file=" + file, "--key-file=/k", "--members=hand"}, []startCase{
		{args: []string{"--server=2"}, leader: 0},
		{args: []string{"--server", "4", "--debugger=sim"}, leader: 3},
		{env: []string{"OMPI_COMM_WORLD_RANK=1"}, leader: 0},
		{args: []string{"--server=010"}, why: "no server 8"}, // as pflag reads it: octal
		{args: []string{"--server=0"}, why: "the first server of its host"},
		{args: []string{"--server=3"}, why: "the first server of its host"},
		{args: []string{"--server=1", "--master"}, why: "the master"},
		{args: []string{"--server=1", "--gdb=lazy"}, leader: 0},
		{args: []string{"--server=1", "--gdb=lazy", "--debugger=sim"}, leader: 0},
		{args: []string{"--server=1", "--gdb=lazy", "--prepare=/home/me/ring"}, leader: 0}, // as sdm debug starts a server
		{args: []string{"--server=1", "--members=serve"}, why: "--members=serve"},
		{args: []string{"--server=1", "--tree=ranks"}, why: "--tree=ranks"},
		{args: []string{"--server=1", "--routes_from=slurm"}, why: "--routes_from=slurm"},
		{args: []string{"--server=1", "--debug"}, why: `"--debug"`},
		{args: []string{"--server=1", "--layout", "0-1:2"}, why: `"--layout"`},
		{args: []string{"--server=1", "--help"}, why: `"--help"`},
		{args: []string{"--server=1", "extra"}, why: `"extra"`},
		{args: []string{"--server=1", "--timeout=forever"}, why: "--timeout"},
		{args: []string{"--server=1", "--port=x"}, why: "--port=x"}, // unused, yet checked by sdm-server
		{args: []string{"--server=1", "--fanout"}, why: "without a value"},
		{args: []string{"--server=1"}, env: []string{"SDM_SESSION_KEY=00"}, why: "$SDM_SESSION_KEY"},
		{args: []string{"--server=1"}, env: []string{"SDM_LISTEN_FD=7"}, leader: 0},
		{args: []string{"--server=1"}, env: []string{"SDM_LISTEN_FD=x"}, why: "$SDM_LISTEN_FD=x"},
		{why: "no rank index"},
		{args: []string{"--server=1", "--routing_file=/nonexistent"}, why: "no such file"},
	}
}

// A member's start is sdm-rank's; every other is sdm-server's, and says
// why.
func TestDecide(t *testing.T) {
	base, cases := starts(t)
	for _, c := range cases {
		args := append(append([]string{}, base...), c.args...)
		p, why := decide(args, env(c.env...))
		switch {
		case c.why != "" && !strings.Contains(why, c.why):
			t.Errorf("%q %q: %q, want sdm-server's start for %q", c.args, c.env, why, c.why)
		case c.why == "" && (why != "" || p.leader != c.leader || p.servers != 5 || p.keyFile != "/k"):
			t.Errorf("%q %q: %+v (%q), want a member of server %d", c.args, c.env, p, why, c.leader)
		}
	}
}

// Whether the servers hand their ranks over is the plan's to say: a
// start without --members=hand is sdm-server's.
func TestDecideTakesThePlansDecision(t *testing.T) {
	args := []string{"--routing_file=" + routes(t, "n1", "n1"), "--key-file=/k", "--server=1"}
	if p, why := decide(args, env()); why == "" {
		t.Errorf("no --members: %+v, want sdm-server's start", p)
	}
	if p, why := decide(append(args, "--members=hand"), env()); why != "" || p.leader != 0 {
		t.Errorf("--members=hand: %+v %q, want a member of server 0", p, why)
	}
}

// The socket a launcher bound for a member is the member's to close.
func TestDecideTakesTheListener(t *testing.T) {
	args := []string{"--routing_file=" + routes(t, "n1", "n1"), "--key-file=/k", "--server=1", "--members=hand"}
	if p, why := decide(args, env("SDM_LISTEN_FD=7")); why != "" || p.listener != 7 {
		t.Errorf("handed socket 7: %+v %q", p, why)
	}
	if p, why := decide(args, env()); why != "" || p.listener != -1 {
		t.Errorf("no socket handed: %+v %q", p, why)
	}
}
