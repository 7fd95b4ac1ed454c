package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/internal/exit"
	"github.com/sdm-hpc/sdm/server"
)

func runServer(args []string) error {
	fs := pflag.NewFlagSet("sdm", pflag.ContinueOnError)
	c := server.Flags(fs)
	if help, err := parseFlags(fs, args, helpFile("server")); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exit.Usage(fmt.Errorf("unexpected argument %q (servers take flags only; see sdm --help)", fs.Arg(0)))
	}
	return server.Run(*c)
}
