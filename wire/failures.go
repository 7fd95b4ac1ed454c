package wire

import (
	"errors"
	"fmt"
)

// Failures says which groups of an answer did not answer ok, one error
// per group, joined: "ranks 2-3 could not start ./ring: error: no such
// file". what is what the ranks were asked to do; where, when not nil,
// says where the ranks run ("vm1, vm2"). Nil when every group answered ok.
func Failures(groups []Group, what string, where func(RankSet) string) error {
	var errs []error
	for _, g := range groups {
		if g.Status == StatusOK {
			continue
		}
		ranks := g.Ranks.String()
		if where != nil {
			ranks += " (" + where(g.Ranks) + ")"
		}
		errs = append(errs, fmt.Errorf("ranks %s could not %s: %s: %s", ranks, what, g.Status, g.Body))
	}
	return errors.Join(errs...)
}
