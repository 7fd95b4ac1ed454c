package console

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sdm-hpc/sdm/wire"
)

// ParseTrace reads a tracepoint as the trace command and sdm report's
// --trace-at take it: LOCATION[,EXPR...] [if COND]. The commas that part
// the expressions are those outside brackets and quotes, so f(a,b) is one
// expression.
func ParseTrace(text string) (wire.Break, error) {
	br := wire.Break{Tracepoint: true}
	head := text
	if i := strings.Index(text, " if "); i >= 0 {
		head, br.Condition = text[:i], strings.TrimSpace(text[i+4:])
		if br.Condition == "" {
			return br, errors.New("nothing after if")
		}
	}
	parts, err := splitTop(head)
	if err != nil {
		return br, err
	}
	br.Location = strings.TrimSpace(parts[0])
	if br.Location == "" || strings.ContainsAny(br.Location, " \t") {
		return br, errors.New("want LOCATION[,EXPR...] [if COND], such as solver.c:42,i,residual")
	}
	for _, e := range parts[1:] {
		if e = strings.TrimSpace(e); e == "" {
			return br, errors.New("an empty expression")
		}
		br.Trace = append(br.Trace, e)
	}
	return br, nil
}

// splitTop splits at the commas outside (), [], {} and quotes.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth--; depth < 0 {
				return nil, errors.New("a bracket closed that was not open")
			}
		case c == ',' && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if depth != 0 || quote != 0 {
		return nil, errors.New("a bracket or quote left open")
	}
	return append(parts, s[start:]), nil
}

// traceCmd sets a tracepoint.
func traceCmd(name, args string) ([]byte, error) {
	br, err := ParseTrace(args)
	if err != nil {
		return nil, usageError("trace %s: %v", args, err)
	}
	return wire.Encode(br)
}

// tracedText is a pass through a tracepoint as text: "trace 2, pass 5:
// i = 5, r = 0.25".
func tracedText(t wire.Traced) string {
	text := fmt.Sprintf("trace %d, pass %d", t.Breakpoint, t.Pass)
	for i, v := range t.Values {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		name := "?"
		if i < len(t.Exprs) {
			name = t.Exprs[i]
		}
		text += sep + name + " = " + v
	}
	return text
}
