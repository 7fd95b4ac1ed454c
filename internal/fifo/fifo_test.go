package fifo

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

func TestOrderAndCounts(t *testing.T) {
	q := New[int]()
	for i := range 5 {
		if !q.Push(i) {
			t.Fatalf("push %d refused by an open queue", i)
		}
	}
	for want := range 3 {
		got, err := q.Pop(context.Background())
		if err != nil || got != want {
			t.Fatalf("pop = %d, %v; want %d", got, err, want)
		}
	}
	if q.Pushed() != 5 || q.Popped() != 3 {
		t.Fatalf("pushed %d popped %d, want 5 and 3", q.Pushed(), q.Popped())
	}
}

func TestCloseLetsReadersFinish(t *testing.T) {
	q := New[string]()
	q.Push("a")
	q.Close()
	q.Close()
	if q.Push("b") {
		t.Fatal("a closed queue took a value")
	}
	if v, err := q.Pop(context.Background()); v != "a" || err != nil {
		t.Fatalf("pop after close = %q, %v; want the value queued before", v, err)
	}
	if _, err := q.Pop(context.Background()); err != io.EOF {
		t.Fatalf("pop of a closed empty queue: %v, want io.EOF", err)
	}
}

func TestAbandonReturnsWhatIsLeft(t *testing.T) {
	q := New[int]()
	q.Push(1)
	q.Push(2)
	if left := q.Abandon(); len(left) != 2 || left[0] != 1 || left[1] != 2 {
		t.Fatalf("abandon = %v, want [1 2]", left)
	}
	if _, err := q.Pop(context.Background()); err != io.EOF {
		t.Fatalf("pop after abandon: %v, want io.EOF", err)
	}
	if q.Popped() != 2 {
		t.Fatalf("popped %d, want the 2 abandoned", q.Popped())
	}
}

func TestPopWaitsForPush(t *testing.T) {
	q := New[int]()
	got := make(chan int)
	go func() {
		v, _ := q.Pop(context.Background())
		got <- v
	}()
	q.Push(7)
	select {
	case v := <-got:
		if v != 7 {
			t.Fatalf("waiting pop got %d, want 7", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting pop was not woken by a push")
	}
}

func TestPopWaitsForClose(t *testing.T) {
	q := New[int]()
	got := make(chan error)
	go func() {
		_, err := q.Pop(context.Background())
		got <- err
	}()
	q.Close()
	select {
	case err := <-got:
		if err != io.EOF {
			t.Fatalf("waiting pop: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting pop was not woken by close")
	}
}

func TestPopEndsWithContext(t *testing.T) {
	q := New[int]()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := q.Pop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pop of an empty queue past its deadline: %v", err)
	}
}

func TestManyWriters(t *testing.T) {
	q := New[int]()
	const writers, each = 8, 1000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.Push(w*each + i)
			}
		}()
	}
	seen := make(map[int]bool)
	last := make([]int, writers)
	for i := range last {
		last[i] = -1
	}
	for range writers * each {
		v, err := q.Pop(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] || v%each <= last[v/each] {
			t.Fatalf("value %d out of its writer's order or twice", v)
		}
		seen[v], last[v/each] = true, v%each
	}
	wg.Wait()
}

func BenchmarkPushPop(b *testing.B) {
	q := New[int]()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		q.Push(i)
		q.Pop(ctx)
	}
}
