//go:build !linux

package routing

import (
	"context"
	"errors"
)

// newInotify fails where there is no inotify, leaving Wait to poll.
func newInotify(ctx context.Context, dir, name string) (notifier, error) {
	return nil, errors.New("inotify is only available on Linux")
}
