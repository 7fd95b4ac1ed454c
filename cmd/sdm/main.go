package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/internal/text"
)

// commands are sdm's subcommands; without one, sdm is a server.
var commands = map[string]func([]string) error{
	"debug": runDebug, "attach": runAttach, "stacks": runStacks, "connect": runConnect, "listen": runListen,
	"requests": runRequests, "routes": runRoutes, "dap": runDAP, "report": runReport,
	"help": func([]string) error { fmt.Print(helpFile("sdm")); return nil },
}

func main() {
	inherit.Wrap("sdm") // a shared gdb starts a rank's program so
	var err error
	args := os.Args[1:]
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		err = runServer(args)
	} else if run, ok := commands[args[0]]; ok {
		err = run(args[1:])
	} else {
		err = fmt.Errorf("unknown command %q\n\n%s", args[0], helpFile("sdm"))
	}
	if code := exit.Status(err); code != 0 {
		if err.Error() != "" {
			fmt.Fprintln(os.Stderr, "sdm:", text.Printable(err.Error(), false))
		}
		os.Exit(code)
	}
}
