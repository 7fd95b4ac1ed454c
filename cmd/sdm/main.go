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

func main() {
	var err error
	args := os.Args[1:]
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub = args[0]
	}
	switch sub {
	case "debug":
		err = runDebug(args[1:])
	case "attach":
		err = runAttach(args[1:])
	case "connect":
		err = runConnect(args[1:])
	case "listen":
		err = runListen(args[1:])
	case "requests":
		err = runRequests(args[1:])
	case "routes":
		err = runRoutes(args[1:])
	case "help":
		fmt.Print(usage)
	case "":
		err = runServer(args)
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", sub, usage)
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
