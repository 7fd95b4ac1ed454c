package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/wire"
)

// seen takes each record as the console prints it: the program's output
// goes on to Text and into the ranks' tails, the events into the
// timeline.
func (w *Watcher) seen(r record) {
	if r.Type != "event" {
		return
	}
	ranks, err := wire.ParseRankSet(r.Ranks)
	if err != nil {
		return
	}
	switch r.Event {
	case "output":
		var out struct {
			Text string `json:"text"`
		}
		json.Unmarshal(r.Value, &out)
		w.output(ranks, out.Text)
	case "starter-output":
		var line string
		json.Unmarshal(r.Value, &line)
		w.print(line + "\n")
	case "running":
		// every continue of a tracepoint says it: the timeline keeps the rest
	default:
		w.entry(r.Ranks, eventText(r))
	}
}

// output shows a piece of ranks' output and keeps their last lines.
func (w *Watcher) output(ranks wire.RankSet, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var shown strings.Builder
	ranks.Each(func(rank int) bool {
		lines := strings.Split(w.partial[rank]+text, "\n")
		w.partial[rank] = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			w.tails[rank] = append(w.tails[rank], strings.TrimRight(l, "\r"))
		}
		if n := len(w.tails[rank]); n > tailLines {
			w.tails[rank] = append(w.tails[rank][:0], w.tails[rank][n-tailLines:]...)
		}
		return true
	})
	for _, l := range strings.SplitAfter(text, "\n") {
		if l != "" {
			shown.WriteString(prefix(ranks) + l)
		}
	}
	if s := shown.String(); s != "" && !strings.HasSuffix(s, "\n") {
		shown.WriteString("\n")
	}
	w.print(shown.String())
}

// entry adds a line to the timeline, while it has room.
func (w *Watcher) entry(ranks, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.rep.Timeline) >= maxTimeline {
		w.rep.Dropped++
		return
	}
	w.rep.Timeline = append(w.rep.Timeline, Entry{At: time.Since(w.start).Seconds(), Ranks: ranks, What: what})
}

// eventText says what an event told.
func eventText(r record) string {
	var st state
	json.Unmarshal(r.Value, &st)
	switch r.Event {
	case "stopped":
		why := st.Reason
		if st.Signal != "" {
			why = st.Signal
		}
		if st.Breakpoint > 0 {
			why = fmt.Sprintf("breakpoint %d", st.Breakpoint)
		}
		return fmt.Sprintf("stopped in %s (%s)", frameText(st.Frame), why)
	case "exited":
		return exitText(st)
	}
	var text string
	if json.Unmarshal(r.Value, &text) == nil && text != "" {
		return r.Event + ": " + text
	}
	return r.Event
}

// tailsOf groups the ranks whose last lines agree, in rank order. Lines
// that differ only in their numbers ("rank 3 of 64: 0.25") agree: the
// group shows its lowest rank's, and says that numbers differ.
func (w *Watcher) tailsOf() []Tail {
	w.mu.Lock()
	defer w.mu.Unlock()
	type group struct {
		ranks wire.RankSet
		first int
		lines []string
		exact string
	}
	by := map[string]*group{}
	var keys []string
	add := func(rank int, lines []string) {
		exact := strings.Join(lines, "\n")
		key := digits.ReplaceAllString(exact, "#")
		g := by[key]
		if g == nil {
			g = &group{first: rank, lines: lines, exact: exact}
			by[key] = g
			keys = append(keys, key)
		}
		if g.exact != exact {
			g.exact = "" // more than one text
		}
		if rank < g.first {
			g.first, g.lines = rank, lines
		}
		g.ranks = g.ranks.Union(wire.Single(rank))
	}
	for rank, lines := range w.tails {
		if p := w.partial[rank]; p != "" {
			lines = append(slices.Clip(lines), p)
		}
		add(rank, lines)
	}
	for rank, p := range w.partial {
		if _, ok := w.tails[rank]; !ok && p != "" {
			add(rank, []string{p})
		}
	}
	tails := make([]Tail, 0, len(by))
	for _, key := range keys {
		g := by[key]
		tails = append(tails, Tail{Ranks: g.ranks.String(), Lines: g.lines, Shown: g.first, Alike: g.exact == ""})
	}
	sort.Slice(tails, func(i, j int) bool { return tails[i].Shown < tails[j].Shown })
	return tails
}

// digits are the numbers in a line of output.
var digits = regexp.MustCompile(`[0-9]+`)
