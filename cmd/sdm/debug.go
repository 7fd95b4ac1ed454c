package main

import (
	"github.com/spf13/pflag"

	"github.com/sdm-hpc/sdm/launcher"
)

func runDebug(args []string) error {
	fs := pflag.NewFlagSet("sdm debug", pflag.ContinueOnError)
	l := launcher.AddLaunchFlags(fs, launcher.AddSessionFlags(fs))
	if help, err := parseFlags(fs, args, helpFile("debug")); help || err != nil {
		return err
	}
	front, err := l.Ready()
	if err != nil {
		return err
	}
	if err := l.Check(); err != nil {
		return err
	}
	ctx, stop := l.EndContext()
	defer stop()
	return launcher.Outcome(l.Start(ctx, front, fs.Args()))
}
