package dap

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	godap "github.com/google/go-dap"
)

// A client of this user is served on the loopback; an address off the
// loopback is refused before anything listens.
func TestListenServesThisUsersClient(t *testing.T) {
	if err := Listen(context.Background(), "0.0.0.0:0", Options{}, nil); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Errorf("--listen 0.0.0.0:0: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- Listen(ctx, "127.0.0.1:0", Options{}, func(a net.Addr) { addrs <- a }) }()
	c, err := net.Dial("tcp", (<-addrs).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := godap.WriteProtocolMessage(c, &godap.InitializeRequest{Request: godap.Request{
		ProtocolMessage: godap.ProtocolMessage{Seq: 1, Type: "request"}, Command: "initialize"}}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	m, err := godap.ReadProtocolMessage(bufio.NewReader(c))
	if r, ok := m.(*godap.InitializeResponse); err != nil || !ok || !r.Success {
		t.Fatalf("initialize over --listen: %#v %v", m, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Listen ended with %v", err)
	}
}
