package console

import (
	"fmt"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// A loss reaches the console twice: as news (the lost event) and in the
// answer to every command that was waiting for the lost ranks. Its cause
// is printed once, by whichever comes first; the other says only that
// the ranks are lost, or nothing for news already told.

// lossNews reports whether ev, a lost event, is news: some of its ranks
// were not reported lost for that reason yet. It narrows ev to those.
func (c *Console) lossNews(ev *client.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	reason := string(ev.Group.Body)
	ev.Group.Ranks = ev.Group.Ranks.Minus(c.losses[reason])
	if ev.Group.Ranks.Empty() {
		return false
	}
	c.addLoss(reason, ev.Group.Ranks)
	return true
}

// lossTold reports whether the loss of g's ranks, an answer's lost group,
// was reported already with its cause, and records it otherwise.
func (c *Console) lossTold(g wire.Group) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	reason := string(g.Body)
	if g.Ranks.Minus(c.losses[reason]).Empty() {
		return true
	}
	c.addLoss(reason, g.Ranks)
	return false
}

// addLoss records ranks as reported lost for reason; c.mu is held.
func (c *Console) addLoss(reason string, ranks wire.RankSet) {
	if c.losses == nil {
		c.losses = make(map[string]wire.RankSet)
	}
	c.losses[reason] = c.losses[reason].Union(ranks)
}

// rejoined forgets the losses of ranks that are back: losing them again
// is news.
func (c *Console) rejoined(ranks wire.RankSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for reason, lost := range c.losses {
		c.losses[reason] = lost.Minus(ranks)
	}
}

// failureText is what an answer that failed says: a timeout names the
// deadline the console gave (the tree's nodes each had their own) once it
// has passed, and why; one that came before (a node found a server not
// responding, silent for longer than it waits) only why; a loss told
// before says only that.
func (c *Console) failureText(g wire.Group) string {
	c.mu.Lock()
	waited := time.Since(c.began)
	c.mu.Unlock()
	switch {
	case g.Status == wire.StatusTimeout && waited < c.opts.Timeout:
		return fmt.Sprintf("no answer (%s)", g.Body)
	case g.Status == wire.StatusTimeout:
		return fmt.Sprintf("no answer within %v (%s)", c.opts.Timeout, g.Body)
	case g.Status == wire.StatusLost && c.lossTold(g):
		return "lost"
	}
	return g.Status.String() + ": " + string(g.Body)
}
