package connect

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
)

// List writes the user's requests in dir to w, oldest first: one line
// each, or one JSON object each with asJSON. What was skipped, and that
// there is none, goes to logger.
func List(w io.Writer, logger *log.Logger, dir string, asJSON bool) error {
	reqs, skipped, err := Requests(dir)
	if err != nil {
		return err
	}
	for _, e := range skipped {
		logger.Print("skipped: ", e)
	}
	enc := json.NewEncoder(w)
	for _, r := range reqs {
		if asJSON {
			enc.Encode(r)
		} else {
			fmt.Fprintln(w, r)
		}
	}
	if len(reqs) == 0 && !asJSON {
		logger.Print("no requests in ", dir)
	}
	return nil
}
