package console

import (
	"errors"
	"testing"
)

// Of sdm listen's sessions, the one whose program ended worst gives the
// status; sessions that ended otherwise do not count.
func TestWorseExit(t *testing.T) {
	three, nine := &ProgramExit{Code: 3}, &ProgramExit{Code: 9}
	other := errors.New("lost the master")
	var got error
	for _, err := range []error{nil, three, other, nine, three} {
		got = WorseExit(got, err)
	}
	if got != nine {
		t.Fatalf("worst of the sessions: %v, want %v", got, nine)
	}
	if WorseExit(nil, other) != nil {
		t.Fatal("an end that is not a program's counts")
	}
}
