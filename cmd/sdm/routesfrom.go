package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/sdm-hpc/sdm/rm/pe"
	"github.com/sdm-hpc/sdm/rm/slurm"
	"github.com/sdm-hpc/sdm/routing"
	"github.com/sdm-hpc/sdm/sdm"
)

// routesFrom returns how a rank server finds its routing table (the
// --routes_from modes, routing.Source) and, for publish, the listener it
// bound. Where the servers compute the table, rank 0 writes it for the
// master.
func routesFrom(mode routing.Source, index int, routingFile string, portBase int, inherited net.Listener) (func(context.Context) (*routing.Table, error), net.Listener, error) {
	wait := func(ctx context.Context) (*routing.Table, error) { return routing.Wait(ctx, routingFile) }
	computed := func(compute func() (*routing.Table, error)) func(context.Context) (*routing.Table, error) {
		return func(context.Context) (*routing.Table, error) {
			table, err := compute()
			if err != nil {
				return nil, err
			}
			if index == 0 {
				// The master, started by the front end, reads it.
				if err := routing.WriteFile(routingFile, table); err != nil {
					return nil, err
				}
			}
			return table, nil
		}
	}
	switch mode {
	case routing.SourceFile:
		return wait, inherited, nil
	case routing.SourcePublish:
		host := routing.PublicHost()
		ln := inherited
		if ln == nil {
			var err error
			if ln, err = sdm.Listen(sdm.BindHost(host), 0); err != nil {
				return nil, nil, err
			}
		}
		entry := routing.Entry{Index: index, Host: host, Port: ln.Addr().(*net.TCPAddr).Port}
		if err := routing.Publish(routingFile, entry); err != nil {
			ln.Close()
			return nil, nil, err
		}
		return wait, ln, nil
	case routing.SourceSLURM, routing.SourcePE:
		if portBase < 1 || portBase > 65535 {
			return nil, nil, fmt.Errorf("--routes_from=%s needs --port_base", mode)
		}
		if mode == routing.SourceSLURM {
			return computed(func() (*routing.Table, error) { return slurm.Routes(os.LookupEnv, portBase) }), inherited, nil
		}
		dir, _ := os.Getwd()
		return computed(func() (*routing.Table, error) { return pe.Routes(os.LookupEnv, dir, portBase) }), inherited, nil
	}
	return nil, nil, fmt.Errorf("--routes_from=%s: not a source of routes", mode)
}
