package connect

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sdm-hpc/sdm/routing"
)

// Request is a job waiting for a front end.
type Request struct {
	ID    string    `json:"id"`
	User  string    `json:"user"`
	UID   int       `json:"uid"`
	Host  string    `json:"host"`
	Dir   string    `json:"cwd"`
	Argv  []string  `json:"argv"`             // the command as the script gave it
	JobID string    `json:"job_id,omitempty"` // the batch system's, when there is one
	Time  time.Time `json:"time"`
	Pid   int       `json:"pid"` // of sdm connect, which waits
	// Nonce comes back in the answer, so that an answer is known to be
	// for this request and not for an older one of the same ID.
	Nonce string `json:"nonce"`
	Plan  Plan   `json:"plan"`
}

// jobIDVars are where batch systems put the job's id, in the order looked.
var jobIDVars = []string{"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "COBALT_JOBID", "JOB_ID"}

// NewRequest describes the job of argv, run by this process, planned as p.
func NewRequest(argv []string, p Plan) (*Request, error) {
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	r := &Request{
		ID: randomHex(4), User: u.Username, UID: os.Geteuid(), Host: host, Dir: cwd,
		Argv: argv, Time: time.Now().UTC(), Pid: os.Getpid(),
		Nonce: randomHex(16), Plan: p,
	}
	for _, v := range jobIDVars {
		if id := os.Getenv(v); id != "" {
			r.JobID = id
			break
		}
	}
	return r, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Write puts the request in dir for front ends to see.
func (r *Request) Write(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(dir, r.ID+".request", append(data, '\n'))
}

// Remove takes the request and whatever answered it out of dir.
func (r *Request) Remove(dir string) {
	for _, ext := range []string{".request", ".answer", ".failed", ".attach", ".release"} {
		os.Remove(filepath.Join(dir, r.ID+ext))
	}
}

// String is the request in one line, for lists and prompts. Every field
// comes from a file and is shown Printable.
func (r *Request) String() string {
	job := ""
	if r.JobID != "" {
		job = " job " + r.JobID
	}
	argv := make([]string, len(r.Argv))
	for i, a := range r.Argv {
		argv[i] = Printable(a)
	}
	return fmt.Sprintf("%s: %s@%s%s pid %d, %s ago, in %s: %s (%s)", r.ID, Printable(r.User), Printable(r.Host), Printable(job), r.Pid,
		time.Since(r.Time).Round(time.Second), Printable(r.Dir), strings.Join(argv, " "), Printable(r.Plan.String()))
}

// ParseRequest reads a request and checks every field a front end relies
// on; name is the file, for errors.
func ParseRequest(data []byte, name string) (*Request, error) {
	var r Request
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a request: %v", name, err)
	}
	bad := func(what string) (*Request, error) { return nil, fmt.Errorf("%s: not a request: %s", name, what) }
	switch {
	case !validID(r.ID):
		return bad(fmt.Sprintf("id %q is not 8 hex digits", r.ID))
	case len(r.Argv) == 0 || r.Argv[0] == "":
		return bad("no command")
	case r.Pid <= 0:
		return bad(fmt.Sprintf("pid %d", r.Pid))
	case r.Host == "":
		return bad("no host")
	case r.Time.IsZero():
		return bad("no time")
	case len(r.Nonce) != 32:
		return bad("no nonce")
	}
	if err := r.Plan.check(); err != nil {
		return bad(err.Error())
	}
	return &r, nil
}

func validID(id string) bool {
	if len(id) != 8 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// Requests lists the user's requests in dir, oldest first. Requests of
// a process that is gone from this host are removed; files that are not
// requests, or not the user's, are skipped, each with its error in skipped.
func Requests(dir string) (reqs []*Request, skipped []error, err error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.request"))
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	for _, path := range names {
		r, err := ReadRequest(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // answered and removed meanwhile
		case err != nil:
			skipped = append(skipped, err)
			continue
		case r.UID != os.Geteuid():
			skipped = append(skipped, fmt.Errorf("%s: a request of uid %d, not yours", Printable(path), r.UID))
			continue
		case r.Host == host && !alive(r.Pid):
			r.Remove(dir)
			continue
		}
		reqs = append(reqs, r)
	}
	sort.Slice(reqs, func(i, j int) bool {
		if !reqs[i].Time.Equal(reqs[j].Time) {
			return reqs[i].Time.Before(reqs[j].Time)
		}
		return reqs[i].ID < reqs[j].ID
	})
	return reqs, skipped, nil
}

// ReadRequest reads one request file.
func ReadRequest(path string) (*Request, error) {
	data, err := readPrivate(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseRequest(data, Printable(path))
	if err != nil {
		return nil, err
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".request"); r.ID != want {
		return nil, fmt.Errorf("%s: not a request: id %s in a file named for %s", Printable(path), r.ID, Printable(want))
	}
	return r, nil
}

// alive reports whether pid is a process of this host.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// WaitRequests waits until dir holds requests that are not in seen and
// returns them, oldest first; files skipped on the way are reported to
// skip, once each.
func WaitRequests(ctx context.Context, dir string, seen map[string]bool, skip func(error)) ([]*Request, error) {
	var fresh []*Request
	err := routing.WaitFor(ctx, dir, "", "a request in "+dir, func() error {
		reqs, skipped, err := Requests(dir)
		if err != nil {
			return err
		}
		for _, e := range skipped {
			if !seen[e.Error()] {
				seen[e.Error()] = true
				skip(e)
			}
		}
		fresh = fresh[:0]
		for _, r := range reqs {
			if !seen[r.ID] {
				fresh = append(fresh, r)
			}
		}
		if len(fresh) == 0 {
			return fs.ErrNotExist
		}
		return nil
	})
	return fresh, err
}
