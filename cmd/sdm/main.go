package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sdm-hpc/sdm/console"
)

// exitError carries an exit status chosen by a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// commands are sdm's subcommands; without one, sdm is a server.
var commands = map[string]func([]string) error{
	"debug": runDebug, "attach": runAttach, "connect": runConnect, "listen": runListen,
	"requests": runRequests, "routes": runRoutes,
	"help": func([]string) error { fmt.Print(usage); return nil },
}

func main() {
	var err error
	args := os.Args[1:]
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		err = runServer(args)
	} else if run, ok := commands[args[0]]; ok {
		err = run(args[1:])
	} else {
		err = fmt.Errorf("unknown command %q\n\n%s", args[0], usage)
	}
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if code != 0 && err.Error() != "" {
			fmt.Fprintln(os.Stderr, "sdm:", err)
		}
		os.Exit(code)
	}
}

// isTerminal reports whether f is a terminal.
var isTerminal = console.IsTerminal
