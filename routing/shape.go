package routing

import "fmt"

// TreeShape is the --tree flag of servers and front ends: true for
// "ranks", one tree node per server; false for "hosts", one per host
// (routing.Hosts). A pflag.Value over the bool it converts.
type TreeShape bool

// String is the flag's value.
func (t *TreeShape) String() string {
	if *t {
		return "ranks"
	}
	return "hosts"
}

// Set parses hosts or ranks.
func (t *TreeShape) Set(v string) error {
	switch v {
	case "hosts":
		*t = false
	case "ranks":
		*t = true
	default:
		return fmt.Errorf("want hosts or ranks, not %q", v)
	}
	return nil
}

// Type names the values.
func (t *TreeShape) Type() string { return "hosts|ranks" }
