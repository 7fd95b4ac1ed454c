package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/internal/handover/vars"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/secret"
)

// plan is a member's start: the server that hands its rank to its
// host's leader, and what it needs for that.
type plan struct {
	index, leader, servers int
	keyFile                string
	debuggerPath           string
	sim                    bool          // the simulated debugger: nothing to spawn
	timeout                time.Duration // to reach the leader
	// listener is the socket the local launcher bound for the server
	// (vars.ListenFD), which a member never listens on; -1 for none.
	listener int
}

// The flags of sdm-server that sdm-rank reads, by the kind of their
// value: a string, an integer, a duration, a boolean. It reads every one
// as sdm-server does, and names none that sdm-server does not have; one
// it does not list (--debug, --layout, --generate_routes, --help) is a
// start for sdm-server.
var flagKinds = map[string]byte{
	"debugger": 's', "gdb": 's', "debugger_path": 's', "members": 's', "ranks-per-gdb": 'i', "tree": 's', "routes_from": 's',
	"routing_file": 's', "key-file": 's', "server": 'i', "fanout": 'i', "timeout": 'd', "master": 'b',
	// A member's start does not use these; sdm-server would check them.
	"proxy": 's', "host": 's', "listen": 's', "port": 'i', "port_base": 'i', "event_window": 'd',
	// The host's first server reads the program ahead (sdm debug names
	// it to every server under --gdb lazy); a member leaves it to it.
	"prepare": 's',
}

// decide reads the arguments and the environment as sdm-server would,
// and returns the plan of a member, or why this start is sdm-server's:
// the host's first server, the master, a server the job's plan did not
// give --members=hand (the plan's decision, routing.Hands, which sdm-rank
// takes as it is), one that was handed what only sdm-server takes, or one
// whose arguments or routing file are not as a member's must be
// (sdm-server then says what is wrong, or waits for the routing file).
func decide(args []string, lookup func(string) (string, bool)) (plan, string) {
	flags, why := scan(args)
	if why != "" {
		return plan{}, why
	}
	value := func(name, def string) string {
		if v, ok := flags[name]; ok {
			return v
		}
		return def
	}
	for _, name := range []string{secret.Env, vars.KeyFD} {
		if _, ok := lookup(name); ok {
			return plan{}, "$" + name + " was handed over"
		}
	}
	listener := -1
	if text, ok := lookup(vars.ListenFD); ok {
		fd, err := strconv.Atoi(text)
		if err != nil || fd < 3 {
			return plan{}, "$" + vars.ListenFD + "=" + text
		}
		listener = fd
	}
	if m, err := strconv.ParseBool(value("master", "false")); err != nil || m {
		return plan{}, "the master"
	}
	p := plan{keyFile: value("key-file", ""), debuggerPath: value("debugger_path", ""), listener: listener,
		sim: value("debugger", "") == "sim"}
	// A member joins its host's first server in a tree of hosts, from the
	// routing file: any other tree or routes are sdm-server's to serve.
	switch {
	case value("members", "") != routing.MembersHand:
		return plan{}, "not --members=hand but --members=" + value("members", "")
	case p.keyFile == "":
		return plan{}, "no --key-file"
	case value("tree", "hosts") != "hosts":
		return plan{}, "--tree=" + value("tree", "")
	case value("routes_from", "file") != "file":
		return plan{}, "--routes_from=" + value("routes_from", "")
	}
	var err error
	if p.timeout, err = time.ParseDuration(value("timeout", "60s")); err != nil {
		return plan{}, "--timeout=" + value("timeout", "")
	}
	fanout, err := strconv.ParseInt(value("fanout", "0"), 0, 64)
	if err != nil {
		return plan{}, "--fanout=" + value("fanout", "")
	}
	server, err := strconv.ParseInt(value("server", "-1"), 0, 64)
	if err != nil {
		return plan{}, "--server=" + value("server", "")
	}
	if p.index, _, err = routing.Index(int(server), lookup); err != nil {
		return plan{}, err.Error()
	}
	table, err := routing.ReadFile(value("routing_file", "routing_file"))
	if err != nil {
		return plan{}, err.Error()
	}
	tree := routing.NewTree(table, int(fanout), true)
	switch {
	case tree.Verify() != nil || p.index >= tree.Size:
		return plan{}, "the routing file has no server " + strconv.Itoa(p.index) + " in a tree of its shape"
	case !tree.Local(p.index):
		return plan{}, "the first server of its host"
	}
	p.leader, p.servers = tree.Parent(p.index), tree.Size
	return p, ""
}

// scan reads args as pflag reads sdm-server's: --name=value, or --name
// value, or a lone --master; anything else is sdm-server's to read.
func scan(args []string) (map[string]string, string) {
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		kind := flagKinds[name]
		switch {
		case !strings.HasPrefix(args[i], "--") || kind == 0:
			return nil, "the argument " + strconv.Quote(args[i])
		case !hasValue && kind == 'b':
			value = "true"
		case !hasValue && i+1 < len(args):
			i++
			value = args[i]
		case !hasValue:
			return nil, "--" + name + " without a value"
		}
		if !valid(kind, value) {
			return nil, "--" + name + "=" + value
		}
		flags[name] = value
	}
	return flags, ""
}

// valid says whether value is one pflag takes for a flag of kind.
func valid(kind byte, value string) bool {
	var err error
	switch kind {
	case 'i':
		_, err = strconv.ParseInt(value, 0, 64)
	case 'd':
		_, err = time.ParseDuration(value)
	case 'b':
		_, err = strconv.ParseBool(value)
	}
	return err == nil
}
