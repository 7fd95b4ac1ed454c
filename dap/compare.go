package dap

import (
	"fmt"
	"strings"

	godap "github.com/google/go-dap"

	"github.com/sdm-hpc/sdm/console"
	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// compareCommand is sdm's own request for one expression over ranks as
// statistics, as the console's compare gives them.
const compareCommand = "sdm/compare"

// CompareRequest asks for Expression over some ranks (all when Ranks is
// empty): sdm/compare.
type CompareRequest struct {
	godap.Request
	Arguments CompareArguments `json:"arguments"`
}

// CompareArguments name the expression and the ranks, as a rank set.
type CompareArguments struct {
	Expression string `json:"expression"`
	Ranks      string `json:"ranks,omitempty"`
}

// CompareResponse is the summary, as --json gives it (docs/JSON.md),
// its text as the console prints it, and the ranks that could not
// evaluate the expression.
type CompareResponse struct {
	godap.Response
	Body CompareBody `json:"body"`
}

// CompareBody is the body of an sdm/compare response.
type CompareBody struct {
	Ranks   string         `json:"ranks,omitempty"`
	Summary map[string]any `json:"summary,omitempty"`
	Text    []string       `json:"text"`
	Errors  []RankErrors   `json:"errors,omitempty"`
}

// compare answers sdm/compare.
func (a *adapter) compare(m *CompareRequest) error {
	expr := strings.TrimSpace(m.Arguments.Expression)
	if expr == "" {
		return fmt.Errorf("%s: no expression", compareCommand)
	}
	j, ranks, err := a.runningRanks(compareCommand, StacksArguments{Ranks: m.Arguments.Ranks})
	if err != nil {
		return err
	}
	groups, err := j.s.Command(a.ctx, ranks, wire.OpCompare, wire.MustEncode(wire.Compare{Expr: expr}), a.opts.Timeout)
	if err != nil {
		return err
	}
	body := CompareBody{Text: []string{}}
	for _, g := range groups {
		s, err := op.Compare.DecodeAnswer(g.Body)
		if g.Status != wire.StatusOK || err != nil {
			body.Errors = append(body.Errors, RankErrors{Ranks: g.Ranks.String(), Error: string(g.Body)})
			continue
		}
		body.Ranks, body.Summary, body.Text = g.Ranks.String(), console.SummaryJSON(s), console.SummaryText(expr, s)
	}
	return a.send(&CompareResponse{Response: ok(m.Request), Body: body})
}
