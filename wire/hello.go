package wire

import (
	"fmt"
	"time"
)

// SendHello introduces the dialer of a fresh link: its index in the
// routing table (the master gives N) and the job's size N.
func SendHello(link *Link, h Hello) error {
	body, err := Encode(h)
	if err != nil {
		return err
	}
	return link.Send(&Message{Kind: KindHello, Body: body})
}

// ReadHello reads the first message of a freshly accepted link, which must
// be a hello, within timeout; the link is closed when none comes in time.
func ReadHello(link *Link, timeout time.Duration) (Hello, error) {
	var h Hello
	timer := time.AfterFunc(timeout, func() { link.Close() })
	defer timer.Stop()
	m, err := link.Recv()
	if err != nil {
		return h, fmt.Errorf("no hello within %v: %w", timeout, err)
	}
	if m.Kind != KindHello {
		return h, fmt.Errorf("first message is a %s, not a hello", m.Kind)
	}
	if err := Decode(m.Body, &h); err != nil {
		return h, err
	}
	return h, nil
}
