package console

import (
	"fmt"
	"sort"
	"strings"
)

// Names are resolved as gdb resolves them: a whole name or alias, else
// a prefix that only one command starts with ("cont", "disp", "wat"), or
// that one command's name is itself a prefix of all the others ("th" is
// thread, not threads). A prefix of several says which they are; a word
// that is none, the nearest name ("did you mean continue?").

// resolve finds what word names among names, which maps every name and
// alias to what it names; what says what the names are, for errors
// ("command", "info subcommand").
func resolve[T comparable](word string, names map[string]T, what string, canonical func(T) string) (T, error) {
	if t, ok := names[word]; ok {
		return t, nil
	}
	var zero T
	var matches []string
	targets := map[T]string{}
	for name, t := range names {
		if strings.HasPrefix(name, word) {
			matches = append(matches, name)
			if prev, ok := targets[t]; !ok || len(name) < len(prev) {
				targets[t] = name
			}
		}
	}
	sort.Strings(matches)
	switch {
	case len(targets) == 1:
		for t := range targets {
			return t, nil
		}
	case len(targets) > 1:
		if t, ok := shortestPrefix(targets); ok {
			return t, nil
		}
		shown := make([]string, 0, len(targets))
		for t := range targets {
			shown = append(shown, canonical(t))
		}
		sort.Strings(shown)
		return zero, usageError("ambiguous %s %q: %s", what, word, strings.Join(shown, ", "))
	}
	if near := nearest(word, names); near != "" {
		return zero, usageError("unknown %s %q: did you mean %q? (try help)", what, word, near)
	}
	return zero, usageError("unknown %s %q (try help)", what, word)
}

// shortestPrefix is the target whose name is a prefix of every other
// target's, if one is.
func shortestPrefix[T comparable](targets map[T]string) (T, bool) {
	var best T
	bestName := ""
	for t, name := range targets {
		if bestName == "" || len(name) < len(bestName) {
			best, bestName = t, name
		}
	}
	for _, name := range targets {
		if !strings.HasPrefix(name, bestName) {
			var zero T
			return zero, false
		}
	}
	return best, true
}

// nearest is the name closest to word by edit distance (a swap of two
// letters counts once), if one is close enough to be a typo of it: one
// edit in a short word, two in a longer one.
func nearest[T any](word string, names map[string]T) string {
	limit := 1
	if len(word) > 4 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for name := range names {
		if len(name) < 2 {
			continue // a one-letter alias is near every short word
		}
		if d := editDistance(word, name); d < bestDist || d == bestDist && name < best {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// commandNames maps every command's name and aliases to it.
func commandNames() map[string]*command {
	names := make(map[string]*command)
	for _, cmd := range commands {
		names[cmd.name] = cmd
		for _, a := range cmd.aliases {
			names[a] = cmd
		}
	}
	return names
}

// lookup finds the command that name names, a prefix of it included.
func lookup(name string) (*command, error) {
	return resolve(name, commandNames(), "command", func(c *command) string { return c.name })
}

// aliasText lists a command's aliases for help, or says it has none.
func aliasText(cmd *command) string {
	if len(cmd.aliases) == 0 {
		return ""
	}
	return fmt.Sprintf(" (also %s)", strings.Join(cmd.aliases, ", "))
}

// IsCommand says whether line is a console command: after an optional
// [SET], a command's name or alias as a whole word (not a prefix of one).
// An editor's debug console sends such lines to Exec, anything else to
// the debugger as an expression.
func IsCommand(line string) bool {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "[") {
		end := strings.IndexByte(line, ']')
		if end < 0 {
			return true // a rank set, however malformed: Exec says what is wrong
		}
		line = strings.TrimSpace(line[end+1:])
	}
	name, _, _ := strings.Cut(line, " ")
	_, ok := commandNames()[name]
	return ok
}
