package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Flags are sdm report's own flags, those that say what to watch for and
// where the report goes.
type Flags struct {
	Options
	traces, limits []string
}

// AddFlags adds sdm report's own flags to fs.
func AddFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{}
	o := &f.Options
	fs.StringVar(&o.HTML, "out", "", "write the report as one HTML page (--out run.html)")
	fs.StringVar(&o.JSON, "json", "", "write the report as JSON (--json run.json)")
	fs.StringArrayVar(&f.traces, "trace-at", nil, "a tracepoint: LOC[,EXPR...] [if COND]; each rank passing LOC has the expressions compared over the ranks, then goes on; repeatable (--trace-at 'solver.c:42,i,residual if i % 10 == 0')")
	fs.StringArrayVar(&f.limits, "trace-limit", nil, "EXPR=LIMIT: in each pass of a tracepoint logging EXPR, name the ranks whose value is over LIMIT; repeatable (--trace-limit residual=1e-3)")
	fs.StringVar(&o.OnCrash, "on-crash", Stop, "after a crash's stacks are taken: stop (halt every rank, take its stacks, end the job), kill (take the others' stacks as they run, end the job) or continue (deliver the signal, watch on)")
	fs.DurationVar(&o.HangAfter, "hang-after", 0, "a hang is no rank's stack changing for this long: stacks, queues and deadlock's diagnosis are taken (--hang-after 5m; 0: never)")
	fs.StringVar(&o.OnHang, "on-hang", Watch, "after a hang is taken: watch (go on, take the next after a change) or kill (end the job)")
	fs.DurationVar(&o.SnapshotEvery, "snapshot-every", 0, "take every rank's stacks and queues this often (--snapshot-every 10m; 0: never)")
	fs.DurationVar(&o.EndAfter, "end-after", 0, "take a last snapshot and end the job this long after it started running, before an allocation's end that nothing announces (--end-after 55m)")
	return f
}

// Parsed checks the flags once parsed and reads the tracepoints; its
// errors are a user's mistakes.
func (f *Flags) Parsed() error {
	o := &f.Options
	if o.OnCrash != Stop && o.OnCrash != Kill && o.OnCrash != Continue {
		return fmt.Errorf("--on-crash %s: want stop, kill or continue", o.OnCrash)
	}
	if o.OnHang != Watch && o.OnHang != Kill {
		return fmt.Errorf("--on-hang %s: want watch or kill", o.OnHang)
	}
	if o.HTML == "" && o.JSON == "" {
		return errors.New("sdm report: say where the report goes: --out FILE.html, --json FILE, or both")
	}
	for _, t := range f.traces {
		s, err := ParseSpec(t)
		if err != nil {
			return err
		}
		o.Traces = append(o.Traces, s)
	}
	for _, l := range f.limits {
		expr, text, _ := strings.Cut(l, "=")
		limit, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if strings.TrimSpace(expr) == "" || err != nil {
			return fmt.Errorf("--trace-limit %q: want EXPR=LIMIT, such as residual=1e-3", l)
		}
		if o.Limits == nil {
			o.Limits = map[string]float64{}
		}
		o.Limits[strings.TrimSpace(expr)] = limit
	}
	return nil
}
