package sdm

import (
	"context"
	"net"

	"github.com/sdm-hpc/sdm/routing"
)

// RoutesFrom is how a rank server finds its routing table (the server's
// --routes_from). The zero value waits for the routing file, PTP's way.
type RoutesFrom struct {
	// Publish has the server bind any free port (or use the listener it
	// inherited), publish its entry beside the routing file, and wait for
	// the file that the front end writes once every server published.
	Publish bool
	// Compute, when set, computes the table from what the launcher says
	// (SLURM's and POE's variables) instead of waiting for it; server 0
	// writes it as the routing file, which the master reads.
	Compute func() (*routing.Table, error)
}

// open returns how server index finds its table, and the listener it is
// to serve on (inherited, bound here to publish, or nil: bind the port
// of its entry).
func (r RoutesFrom) open(index int, file string, inherited net.Listener) (func(context.Context) (*routing.Table, error), net.Listener, error) {
	wait := func(ctx context.Context) (*routing.Table, error) { return routing.Wait(ctx, file) }
	switch {
	case r.Compute != nil:
		return func(context.Context) (*routing.Table, error) {
			table, err := r.Compute()
			if err == nil && index == 0 {
				err = routing.Write(file, table, nil)
			}
			return table, err
		}, inherited, nil
	case r.Publish:
		host := routing.PublicHost()
		ln := inherited
		if ln == nil {
			var err error
			if ln, err = Listen(BindHost(host), 0); err != nil {
				return nil, nil, err
			}
		}
		entry := routing.Entry{Index: index, Host: host, Port: ln.Addr().(*net.TCPAddr).Port}
		if err := routing.Publish(file, entry); err != nil {
			ln.Close()
			return nil, nil, err
		}
		return wait, ln, nil
	}
	return wait, inherited, nil
}
