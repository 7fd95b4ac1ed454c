package routing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPublishAndWait(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	done := make(chan *Table, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		table, err := WaitPublished(ctx, file, 3)
		if err != nil {
			t.Error(err)
		}
		done <- table
	}()
	for i, host := range []string{"b", "a", "c"} {
		if err := Publish(file, Entry{Index: 2 - i, Host: host, Port: 1000 + i}); err != nil {
			t.Fatal(err)
		}
	}
	table := <-done
	if table.Size() != 3 || table.Entries[0].Host != "c" || table.Entries[2].Host != "b" {
		t.Fatalf("published table: %+v", table)
	}
}

func TestWaitPublishedNamesMissing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	Publish(file, Entry{Index: 1, Host: "h", Port: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := WaitPublished(ctx, file, 3)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "1 of 3 servers published; missing 0, 2") {
		t.Fatalf("deadline: %v", err)
	}
}

func TestWaitPublishedRefusesGarbage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	os.MkdirAll(PublishDir(file), 0o755)
	os.WriteFile(filepath.Join(PublishDir(file), "0"), []byte("0 h 99999\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := WaitPublished(ctx, file, 1)
	if err == nil || !strings.Contains(err.Error(), "port \"99999\" out of range") {
		t.Fatalf("bad entry: %v", err)
	}
	if err := Publish(file, Entry{Index: 0, Host: "h", Port: 0}); err == nil {
		t.Fatal("published port 0")
	}
}

func TestCollectWritesTheRoutingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "routes")
	for i := range 2 {
		if err := Publish(file, Entry{Index: i, Host: "h", Port: 2000 + i}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Collect(ctx, file, 2); err != nil {
		t.Fatal(err)
	}
	table, err := ReadFile(file)
	if err != nil || table.Size() != 2 || table.Entries[1].Port != 2001 {
		t.Fatalf("the routing file collected: %+v %v", table, err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
}
