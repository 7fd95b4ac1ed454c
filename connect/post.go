package connect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sdm-hpc/sdm/routing"
)

// A postKind is one of the messages the two sides of an accepted request
// leave each other in the directory, as ID.KIND.
type postKind string

const (
	postFailed  postKind = "failed"  // job side: it could not start (the reason)
	postAttach  postKind = "attach"  // job side, MPIR: the body of the attach command
	postRelease postKind = "release" // front end, MPIR: releaseOK, or why not
)

// releaseOK is the release that lets the starter go.
const releaseOK = "ok"

// A job acquired through MPIR (Plan.Mode "mpir") comes up in two steps
// that both sides must agree on: the job side holds its starter and posts
// the attach command for its ranks (PostAttach); the front end has every
// rank attach and answers with its verdict (PostRelease); the job side
// lets the starter go, or kills it (WaitRelease).

// PostAttach leaves the front end the attach command's body for the ranks
// of r's job (a wire.Attach).
func PostAttach(dir string, r *Request, body []byte) error {
	return post(dir, r, postAttach, body)
}

// WaitAttach waits for the job side's attach command body.
func WaitAttach(ctx context.Context, dir string, r *Request) ([]byte, error) {
	body, err := waitPost(ctx, dir, r, postAttach)
	if err != nil {
		return nil, fmt.Errorf("the job side sent no table: %w", err)
	}
	return body, nil
}

// PostRelease tells the job side whether its ranks are attached: nil
// lets the starter go; an error says why it is to be killed.
func PostRelease(dir string, r *Request, attached error) error {
	verdict := releaseOK
	if attached != nil {
		verdict = attached.Error()
	}
	return post(dir, r, postRelease, []byte(verdict))
}

// WaitRelease waits for the front end's verdict: nil when the ranks are
// attached and the starter may go on, else why not.
func WaitRelease(ctx context.Context, dir string, r *Request) error {
	verdict, err := waitPost(ctx, dir, r, postRelease)
	switch {
	case err != nil:
		return fmt.Errorf("the front end did not attach the ranks: %w", err)
	case string(verdict) != releaseOK:
		return errors.New("the front end could not attach the ranks: " + Printable(string(verdict)))
	}
	return nil
}

// post leaves data for the other side of an accepted request.
func post(dir string, r *Request, kind postKind, data []byte) error {
	return writeFile(dir, r.ID+"."+string(kind), data)
}

// waitPost waits for the other side's message of this kind, returns what
// it holds and removes it.
func waitPost(ctx context.Context, dir string, r *Request, kind postKind) ([]byte, error) {
	name := r.ID + "." + string(kind)
	path := filepath.Join(dir, name)
	var data []byte
	err := routing.WaitFor(ctx, dir, name, name+" in "+dir, func() (err error) {
		data, err = readPrivate(path)
		return err
	})
	if err != nil {
		return nil, err
	}
	os.Remove(path)
	return data, nil
}
