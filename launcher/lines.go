package launcher

import (
	"bytes"
	"sync"
)

// unlabelFunc reads the rank label of a line (rm.Labeller's Unlabel).
type unlabelFunc func(line string) (rank int, stream, text string, ok bool)

// lineWriter cuts what a starter writes into lines and hands each on with
// the rank its label names, or -1.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	unlabel unlabelFunc // nil: no line has a label
	to      func(StarterLine)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := StarterLine{Rank: -1, Text: string(w.partial[:i])}
		w.partial = w.partial[i+1:]
		if w.unlabel != nil {
			if rank, stream, text, ok := w.unlabel(line.Text); ok {
				line = StarterLine{Rank: rank, Stream: stream, Text: text}
			}
		}
		w.to(line)
	}
}
