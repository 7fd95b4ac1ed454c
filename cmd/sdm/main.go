// Command sdm is the scalable debug manager: one binary for the debug
// servers that run beside every rank (started by mpirun, srun, poe or the
// built-in local launcher), the master at the root of their tree, and the
// front end that people type at.
//
//	sdm debug -n 8 --debugger sim -- ring       # a whole session on this machine
//	sdm --routing_file F [--server=ID]          # a rank server, as PTP's sdm
//	sdm --master --host H --port P --routing_file F
//	sdm routes check F | sdm routes tree -n N   # routing-file tools
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
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

const usage = `sdm — scalable debug manager for parallel programs

Front end:
  sdm debug [flags] -- PROGRAM [ARGS...]   start a job under the debugger (sdm debug --help)
  sdm debug --mpir [flags] -- PROGRAM ...  start it with its own launcher, acquire it through MPIR
  sdm attach --pid PID [flags]             take over a running job through its starter (sdm attach --help)
  sdm connect [flags] COMMAND [ARGS...]    in a batch script: wait for a front end to debug COMMAND
  sdm listen [flags]                       accept (or reject) jobs that wait in sdm connect
  sdm requests                             list the jobs that wait
  sdm routes check FILE                    check a routing file
  sdm routes tree -n N [--fanout K]        print the tree of N servers

Servers (started by a launcher, one per rank, as PTP's sdm):
  sdm [--server=ID] --routing_file=FILE [--debugger=gdb-mi|sim]
  sdm --master --host=H --port=P --routing_file=FILE
  sdm --help                               every server flag
`
