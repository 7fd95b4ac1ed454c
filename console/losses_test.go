package console

import (
	"bytes"
	"testing"
	"time"

	"github.com/sdm-hpc/sdm/client"
	"github.com/sdm-hpc/sdm/wire"
)

// A loss is told once with its cause, whether the news or an answer
// comes first; after a rejoin, a new loss is news again. A timeout names
// the console's deadline, once it has passed, and why.
func TestLossToldOnce(t *testing.T) {
	var out bytes.Buffer
	c := New(newFakeTree(16, halted), &out, Options{Timeout: 2 * time.Second})
	sub := wire.RankSet{}.Union(wire.Single(1)).Union(wire.Single(5))
	closed := wire.Group{Ranks: sub, Status: wire.StatusLost, Body: []byte("connection closed by server 1")}
	news := client.Event{Op: wire.EventLost, Group: wire.Group{Ranks: sub, Body: closed.Body}}

	c.printEvents([]client.Event{news})
	c.printReply(wire.OpStatus, "", closed)
	c.printEvents([]client.Event{news})
	c.printEvents([]client.Event{client.Event{Op: wire.EventRejoined, Group: wire.Group{Ranks: sub, Body: []byte("server 1 reconnected")}}})
	c.printReply(wire.OpStatus, "", closed)
	c.printEvents([]client.Event{news})
	c.began = time.Now().Add(-3 * time.Second)
	c.printReply(wire.OpStatus, "", wire.Group{Ranks: sub, Status: wire.StatusTimeout, Body: []byte("server 1 not responding")})

	want := "[1,5] lost: connection closed by server 1\n" +
		"[1,5] lost\n" +
		"[1,5] rejoined: server 1 reconnected\n" +
		"[1,5] lost: connection closed by server 1\n" +
		"[1,5] no answer within 2s (server 1 not responding)\n"
	if got := out.String(); got != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", got, want)
	}
}
