package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// write completes the report and writes its files, then prints the
// summary. The error is the program's status, or why a file could not
// be written.
func (w *Watcher) write() error {
	r := &w.rep
	r.Seconds = w.since()
	for _, t := range r.Traces {
		t.hits(w.o.Limits)
	}
	r.Exits = exitsOf(w.exits)
	r.Output = w.tailsOf()
	status := w.status()
	if status != nil {
		r.Status = status.Code
	}
	r.Summary = summary(r)
	var failed []error
	var wrote []string
	if w.o.JSON != "" {
		b, err := json.MarshalIndent(r, "", " ")
		if err == nil {
			err = writeFile(w.o.JSON, append(b, '\n'))
		}
		if err != nil {
			failed = append(failed, err)
		} else {
			wrote = append(wrote, w.o.JSON)
		}
	}
	if w.o.HTML != "" {
		var b bytes.Buffer
		err := page(&b, r)
		if err == nil {
			err = writeFile(w.o.HTML, b.Bytes())
		}
		if err != nil {
			failed = append(failed, err)
		} else {
			wrote = append(wrote, w.o.HTML)
		}
	}
	lines := r.Summary
	if len(wrote) > 0 {
		lines = append(lines, "report: "+strings.Join(wrote, ", "))
	}
	w.print("sdm report: " + strings.Join(lines, "\n  ") + "\n")
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	if status != nil {
		return status
	}
	return nil
}

// writeFile writes a report file whole: a reader never sees half of one.
// It may hold the program's values, so only its owner reads it.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return fmt.Errorf("report: %v", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("report %s: %v", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report %s: %v", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %v", err)
	}
	return nil
}

// Unstarted writes the report of a job that never came up (its launch
// failed, or the job it was to watch could not be taken), saying why,
// so that a batch script's report is there whatever happened. It is
// nothing once Drive has run.
func (w *Watcher) Unstarted(why error) error {
	w.mu.Lock()
	driven := w.driven
	w.mu.Unlock()
	if driven || why == nil {
		return nil
	}
	w.rep.Started = w.start.UTC()
	first, _, _ := strings.Cut(why.Error(), "\n")
	w.rep.Outcome, w.rep.Error = "not started: "+strings.TrimSuffix(first, ":"), why.Error()
	return w.write()
}
