package report

import (
	"bytes"
	"encoding/json"
	"sync"
)

// record is one object of the console's JSON (docs/JSON.md): a reply, an
// event, a note or a message. Only what a report reads is decoded.
type record struct {
	Type     string          `json:"type"`
	Event    string          `json:"event"`
	Ranks    string          `json:"ranks"`
	Value    json.RawMessage `json:"value"`
	OK       bool            `json:"ok"`
	Groups   []group         `json:"groups"`
	Error    string          `json:"error"`
	Message  string          `json:"message"`
	Messages []string        `json:"messages"`
}

// group is one merged answer of a reply.
type group struct {
	Ranks  string          `json:"ranks"`
	Count  int             `json:"count"`
	Op     string          `json:"op,omitempty"`
	Note   string          `json:"note,omitempty"`
	Status string          `json:"status,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// recorder is the console's writer. It cuts what the console prints into
// records: the reply of the command that ran is kept for the one who ran
// it, events are queued for the watch and shown to seen as they come (the
// console's printer calls Write, so seen runs in its order and must not
// call the console).
type recorder struct {
	mu      sync.Mutex
	partial []byte
	reply   *record
	events  []record
	seen    func(record)
}

// Write takes whole lines of JSON; a line cut short waits for its end.
func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.partial = append(r.partial, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, append([]byte(nil), r.partial[:i]...))
		r.partial = r.partial[i+1:]
	}
	r.mu.Unlock()
	for _, line := range lines {
		var rec record
		if json.Unmarshal(line, &rec) != nil {
			continue // the console prints only JSON under --json
		}
		if r.seen != nil {
			r.seen(rec)
		}
		r.mu.Lock()
		switch rec.Type {
		case "reply":
			r.reply = &rec
		case "event":
			r.events = append(r.events, rec)
		}
		r.mu.Unlock()
	}
	return len(p), nil
}

// takeReply returns the last reply printed, and forgets it.
func (r *recorder) takeReply() *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.reply
	r.reply = nil
	return rep
}

// takeEvents returns the events printed since the last call.
func (r *recorder) takeEvents() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}
