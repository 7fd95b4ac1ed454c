// A server's GOMAXPROCS comes from its launcher, not from the container's
// CPU limit, and is not revisited every second: the runtime then neither
// reads the cgroup files at start nor wakes to look again.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command sdm-server is sdm's server role alone: a rank server, or with
// --master the master, with the same flags as `sdm` run without a
// command (sdm --help). Launchers start it, when it sits beside sdm,
// in place of sdm for every server of a job: it links none of the front
// ends (console, launchers, editors), so each of a node's hundreds of
// servers starts sooner and maps less.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/internal/inherit"
	"github.com/sdm-hpc/sdm/server"
)

const usage = `sdm-server: the rank server and master of sdm, for launchers.

  mpirun -np N sdm-server --routing_file=F [flags]    one server per rank
  sdm-server --master --routing_file=F [flags]        the root of the tree

It takes the flags of sdm run without a command (see sdm --help):

`

func main() {
	inherit.Wrap("sdm-server") // a shared gdb starts a rank's program so
	fs := pflag.NewFlagSet("sdm-server", pflag.ContinueOnError)
	c := server.Flags(fs)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage+fs.FlagUsages()) }
	err := fs.Parse(os.Args[1:])
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return
	case err != nil:
		err = exit.Usage(err)
	case fs.NArg() > 0:
		err = exit.Usage(fmt.Errorf("unexpected argument %q (servers take flags only; see sdm-server --help)", fs.Arg(0)))
	default:
		err = server.Run(*c)
	}
	if code := exit.Status(err); code != 0 {
		if err.Error() != "" {
			fmt.Fprintln(os.Stderr, "sdm-server:", err)
		}
		os.Exit(code)
	}
}
