package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sdm-hpc/sdm/routing"
)

// Answer is a front end's answer to a request.
type Answer struct {
	ID     string `json:"id"`
	Nonce  string `json:"nonce"` // the request's
	Accept bool   `json:"accept"`
	Reason string `json:"reason,omitempty"` // why not
	// Address is where the job's master dials the front end; Key is the
	// session key, in hex. They are handed over in this 0600 file, never
	// on a command line, and the job side removes the file once read.
	Address string `json:"address,omitempty"`
	Key     string `json:"key,omitempty"`
	// Options for the job's servers.
	Fanout int  `json:"fanout,omitempty"`
	Debug  bool `json:"debug,omitempty"`
}

// Reply answers r: the job side, waiting, reads it.
func Reply(dir string, r *Request, a Answer) error {
	a.ID, a.Nonce = r.ID, r.Nonce
	if _, err := os.Stat(filepath.Join(dir, r.ID+".request")); err != nil {
		return fmt.Errorf("request %s is gone (its job stopped waiting)", r.ID)
	}
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return writeFile(dir, r.ID+".answer", append(data, '\n'))
}

// WaitAnswer waits until r is answered and returns the answer, removing
// its file, which may hold the session key. An answer with the wrong
// nonce, or that cannot be read, is an error: a front end means to answer
// but something is wrong.
func WaitAnswer(ctx context.Context, dir string, r *Request) (*Answer, error) {
	path := filepath.Join(dir, r.ID+".answer")
	var a Answer
	err := routing.WaitFor(ctx, dir, r.ID+".answer", "a front end to answer request "+r.ID+" in "+dir, func() error {
		data, err := readPrivate(path)
		if err != nil {
			return err
		}
		os.Remove(path)
		if err := json.Unmarshal(data, &a); err != nil {
			return fmt.Errorf("%s: not an answer: %v", path, err)
		}
		if a.ID != r.ID || a.Nonce != r.Nonce {
			return fmt.Errorf("%s: an answer to another request", path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// Fail tells the front end that accepted r that the job side could not
// start: it stops waiting for the job's master at once, with this reason.
func Fail(dir string, r *Request, err error) error {
	return post(dir, r, postFailed, []byte(err.Error()+"\n"))
}

// WaitFailed returns when the job side of r reports a failure (its
// reason), or ctx ends (nil).
func WaitFailed(ctx context.Context, dir string, r *Request) error {
	data, err := waitPost(ctx, dir, r, postFailed)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return errors.New(Printable(strings.TrimSpace(string(data))))
}
