package hold

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The kernel tells a tracer of its tracees' stops by SIGCHLD, to the
// tracer's process: one watcher of the signal wakes every tracer, each of
// which then reads what is its own (a wait limited to its thread).
var chld struct {
	once    sync.Once
	mu      sync.Mutex
	tracers map[chan struct{}]bool
}

// subscribe has wake poked at every SIGCHLD until the returned function
// is called.
func subscribe(wake chan struct{}) func() {
	chld.once.Do(func() {
		chld.tracers = map[chan struct{}]bool{}
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGCHLD)
		go func() {
			for range c {
				chld.mu.Lock()
				for w := range chld.tracers {
					poke(w)
				}
				chld.mu.Unlock()
			}
		}()
	})
	chld.mu.Lock()
	chld.tracers[wake] = true
	chld.mu.Unlock()
	return func() {
		chld.mu.Lock()
		delete(chld.tracers, wake)
		chld.mu.Unlock()
	}
}

// poke wakes a tracer unless a wake is pending already.
func poke(w chan struct{}) {
	select {
	case w <- struct{}{}:
	default:
	}
}
