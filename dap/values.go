package dap

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// member is one member of an aggregate value as gdb prints it: a field
// ("x = 1"), or an element of an array, named by its index.
type member struct {
	name  string
	value string
	expr  string // how to name it in an expression; "" for none (a base class, repeated elements)
}

var repeats = lazyRegexp(` <repeats (\d+) times>$`)

// members splits value, an aggregate as gdb prints it ("{a = 1, b =
// {2, 3}}", "{1, 0 <repeats 15 times>}"), into its members, named for
// expressions under parent; false when value is not an aggregate.
func members(parent, value string) ([]member, bool) {
	value = strings.TrimSpace(value)
	if strings.HasPrefix(value, "@0x") {
		// A reference: "@0x7ffd5c: {x = 1}", the value after the address.
		if _, v, ok := strings.Cut(value, ": "); ok {
			value = v
		}
	}
	if !strings.HasPrefix(value, "{") || !strings.HasSuffix(value, "}") || value == "{...}" {
		return nil, false
	}
	parts, ok := splitTop(value[1 : len(value)-1])
	if !ok {
		return nil, false
	}
	var out []member
	index := 0
	for _, p := range parts {
		if name, v, ok := field(p); ok {
			m := member{name: name, value: v}
			if !strings.HasPrefix(name, "<") && parent != "" {
				m.expr = "(" + parent + ")." + name
			}
			out = append(out, m)
			continue
		}
		if r := repeats().FindStringSubmatch(p); r != nil {
			n, _ := strconv.Atoi(r[1])
			out = append(out, member{name: fmt.Sprintf("[%d..%d]", index, index+n-1), value: strings.TrimSuffix(p, r[0])})
			index += n
			continue
		}
		m := member{name: fmt.Sprintf("[%d]", index), value: p}
		if parent != "" {
			m.expr = fmt.Sprintf("(%s)[%d]", parent, index)
		}
		out = append(out, m)
		index++
	}
	return out, true
}

// field splits "name = value" at its first top-level " = ".
func field(p string) (name, value string, ok bool) {
	eachTop(p, func(i int) bool {
		if !strings.HasPrefix(p[i:], " = ") {
			return false
		}
		name, value, ok = p[:i], p[i+3:], i > 0
		return true
	})
	return name, value, ok
}

// splitTop splits s at its top-level commas. false when its brackets or
// quotes do not balance.
func splitTop(s string) ([]string, bool) {
	var parts []string
	start := 0
	balanced := eachTop(s, func(i int) bool {
		if s[i] == ',' {
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
		return false
	})
	if !balanced {
		return nil, false
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" || len(parts) > 0 {
		parts = append(parts, rest)
	}
	return parts, true
}

// eachTop calls at with the index of every byte of s at the top level:
// outside quotes and outside braces, brackets, parentheses and angle
// brackets, until at says stop. balanced is false when those do not
// close (unknown when at stopped the scan).
func eachTop(s string, at func(i int) (stop bool)) (balanced bool) {
	depth, quote := 0, byte(0)
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
		case strings.IndexByte("{([<", c) >= 0:
			depth++
		case strings.IndexByte("})]>", c) >= 0:
			depth--
			if depth < 0 {
				return false
			}
		case depth == 0 && at(i):
			return true
		}
	}
	return depth == 0 && quote == 0
}

// pointsTo says whether a value of type typ is a pointer worth following:
// not null, not a string (char *), whose value gdb prints already.
func pointsTo(typ, value string) bool {
	typ = strings.TrimSpace(typ)
	if !strings.HasSuffix(typ, "*") || strings.HasPrefix(value, "0x0") && (len(value) == 3 || value[3] == ' ') {
		return false
	}
	base := strings.TrimSpace(strings.TrimSuffix(typ, "*"))
	base = strings.TrimPrefix(base, "const ")
	if base == "char" || base == "unsigned char" || base == "signed char" || base == "void" || strings.HasSuffix(base, "(*)") {
		return false
	}
	return strings.HasPrefix(value, "0x") || strings.HasPrefix(value, "(")
}

// lazyRegexp compiles expr at its first use, not at every sdm's start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
