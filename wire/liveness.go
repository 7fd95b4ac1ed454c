package wire

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrSilent is wrapped when a link is dropped because its peer said
// nothing, not even an answer to a ping, for LinkConfig.Silence.
var ErrSilent = errors.New("peer silent")

// epoch anchors clock: durations since it are monotonic, and keep running
// while the process is stopped.
var epoch = time.Now()

// clock is the monotonic time, as a duration since epoch.
func clock() time.Duration { return time.Since(epoch) }

// liveness tells how long a link's peer has been silent. The peer is
// heard from whenever a record arrives.
//
// Two silences count. A command's wait (Silence) counts only while an
// answer is expected from the peer (Expect), and the node that expects
// it pings the peer every second meanwhile: an idle link wakes nobody
// for it. The link's own end (watch) counts every silence, for a peer
// whose host vanished: a TCP link's watchdog pings an idle peer four
// times within the silence limit, and drops the link once the peer has
// said nothing for the limit. A local link has no watchdog: its peer's
// end closes its pipes when it goes.
//
// A process that was stopped itself (SIGSTOP, a swapped-out node) finds
// on waking that nothing arrived for as long as it slept, although the
// peer may have answered every ping: the answers wait unread in the
// socket. The watchdog ticks every interval; a tick that comes late says
// that this process did not run, and the silence counts from then.
type liveness struct {
	heard *atomic.Int64 // the last record (secureConn.heard)
	// interval is how often the watchdog ticks and pings; 0: no watchdog.
	interval time.Duration
	expect   atomic.Int64 // since when an answer is expected (Link.Expect), 0 when none is
	pinging  atomic.Bool  // a ping is out: one at a time
	dropped  atomic.Pointer[error]
}

// Silence is how long the peer has not answered while an answer was
// expected from it (Expect); zero while none is, whatever the time since
// its last word.
func (l *Link) Silence() time.Duration {
	lv := &l.live
	since := time.Duration(lv.expect.Load())
	if since == 0 {
		return 0
	}
	return max(clock()-max(time.Duration(lv.heard.Load()), since), 0)
}

// watch pings the peer every interval and drops the link once the peer
// has not been heard from for limit (counted from this process's waking,
// if it did not run since).
func (l *Link) watch(limit time.Duration) {
	lv := &l.live
	ticker := time.NewTicker(lv.interval)
	defer ticker.Stop()
	var woke time.Duration // when a late tick last said this process had not run
	ticked := clock()
	for {
		select {
		case <-l.Done():
			return
		case <-ticker.C:
		}
		now := clock()
		if now-ticked > 2*lv.interval {
			woke = now
		}
		ticked = now
		if quiet := now - max(time.Duration(lv.heard.Load()), woke); quiet >= limit {
			err := fmt.Errorf("%w: no word from %s for %v", ErrSilent, l.RemoteAddr(), quiet.Round(time.Second))
			lv.dropped.CompareAndSwap(nil, &err)
			l.Close()
			return
		}
		l.Ping()
	}
}

// Ping asks the peer for a word, which Silence then counts from; one
// ping at a time, so that a peer that does not answer gets no more.
func (l *Link) Ping() {
	if l.live.pinging.CompareAndSwap(false, true) {
		go func() {
			defer l.live.pinging.Store(false)
			if l.session == nil {
				l.write(l.control, &Message{Kind: KindPing})
				return
			}
			l.session.Ping()
		}()
	}
}

// Expect says whether an answer is awaited from the peer, and returns
// whether the link expects a word from it now. While it does, Silence
// counts from the moment it began to (or from the peer's last word, if
// later). An answer that was awaited and never came keeps it expecting
// until the peer is heard from, so that a peer that went silent stays
// silent. A link that expects nothing finds its peer not silent,
// whatever the time since its last word.
func (l *Link) Expect(awaited bool) bool {
	lv := &l.live
	if awaited {
		lv.expect.CompareAndSwap(0, int64(max(clock(), 1)))
		return true
	}
	since := lv.expect.Load()
	if since != 0 && lv.heard.Load() >= since {
		lv.expect.CompareAndSwap(since, 0)
		return false
	}
	return since != 0
}

// err is why the watchdog dropped the link, or nil.
func (lv *liveness) err() error {
	if err := lv.dropped.Load(); err != nil {
		return *err
	}
	return nil
}
