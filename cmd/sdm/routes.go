package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/routing"
)

func runRoutes(args []string) error {
	if len(args) == 0 {
		return exit.Usage(fmt.Errorf("routes needs a subcommand\n%s", helpFile("routes")))
	}
	switch args[0] {
	case "check":
		if len(args) != 2 {
			return exit.Usage(fmt.Errorf("usage: sdm routes check FILE"))
		}
		t, err := routing.ReadFile(args[1])
		if err != nil {
			return err
		}
		fmt.Printf("ok %d entries\n", t.Size())
		return nil
	case "tree":
		return routesTree(args[1:])
	case "collect":
		return routesCollect(args[1:])
	case "-h", "--help", "help":
		fmt.Print(helpFile("routes"))
		return nil
	}
	return exit.Usage(fmt.Errorf("unknown routes subcommand %q\n%s", args[0], helpFile("routes")))
}

func routesTree(args []string) error {
	fs := pflag.NewFlagSet("routes tree", pflag.ContinueOnError)
	var tree routing.Tree
	var rankTree bool
	fs.IntVarP(&tree.Size, "size", "n", 0, "number of servers (or a routing file as the argument: the tree its servers form)")
	fs.IntVar(&tree.Fanout, "fanout", 0, "0 for PTP's binomial tree, K >= 2 for a K-ary tree")
	fs.Var((*routing.TreeShape)(&rankTree), "tree", "with a routing file: hosts (its servers grouped by host) or ranks (one node per server)")
	if err := fs.Parse(args); err != nil {
		return exit.Usage(err)
	}
	switch {
	case fs.NArg() > 1 || fs.NArg() == 1 && tree.Size != 0:
		return exit.Usage(fmt.Errorf("usage: sdm routes tree -n N [--fanout K], or sdm routes tree [--fanout K] [--tree hosts|ranks] FILE"))
	case fs.NArg() == 1:
		table, err := routing.ReadFile(fs.Arg(0))
		if err != nil {
			return err
		}
		tree = routing.NewTree(table, tree.Fanout, !rankTree)
	}
	if err := tree.Verify(); err != nil {
		return exit.Usage(err)
	}
	_, err := tree.WriteTo(os.Stdout)
	return err
}

func routesCollect(args []string) error {
	fs := pflag.NewFlagSet("routes collect", pflag.ContinueOnError)
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for every server")
	if err := fs.Parse(args); err != nil {
		return exit.Usage(err)
	}
	if fs.NArg() != 2 {
		return exit.Usage(fmt.Errorf("usage: sdm routes collect [--timeout D] FILE N"))
	}
	n, err := strconv.Atoi(fs.Arg(1))
	if err != nil {
		return exit.Usage(fmt.Errorf("routes collect: %q is not a number of servers", fs.Arg(1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return routing.Collect(ctx, fs.Arg(0), n)
}
