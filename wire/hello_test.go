package wire

import (
	"strings"
	"testing"
	"time"
)

func TestHelloRoundTrip(t *testing.T) {
	a, b := linkPair(t)
	if err := SendHello(a, Hello{Index: 3, Size: 8}); err != nil {
		t.Fatal(err)
	}
	h, err := ReadHello(b, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if h != (Hello{Index: 3, Size: 8}) {
		t.Fatalf("got %+v, want index 3 of 8", h)
	}
}

func TestReadHelloRefusesAnotherKind(t *testing.T) {
	a, b := linkPair(t)
	if err := a.Send(&Message{Kind: KindCommand, ID: 1, Op: "status", Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	_, err := ReadHello(b, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not a hello") {
		t.Fatalf("got %v, want a refusal of a command as first message", err)
	}
}

func TestReadHelloGivesUpAtItsDeadline(t *testing.T) {
	_, b := linkPair(t)
	_, err := ReadHello(b, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no hello within 50ms") {
		t.Fatalf("got %v, want no hello within 50ms", err)
	}
}
