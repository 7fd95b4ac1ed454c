package console

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/sdm-hpc/sdm/op"
	"github.com/sdm-hpc/sdm/wire"
)

// Complete returns the completions of a partly typed line, whole lines as
// line editors want them: command names (and aliases) after an optional
// [SET], and set names inside the brackets.
func (c *Console) Complete(line string) []string {
	head, word := "", line
	if strings.HasPrefix(line, "[") {
		end := strings.IndexByte(line, ']')
		if end < 0 {
			// Inside the brackets: complete the last set name.
			i := strings.LastIndexAny(line, "[,")
			return c.completeSets(line[:i+1], line[i+1:])
		}
		head, word = line[:end+1], line[end+1:]
		trimmed := strings.TrimLeft(word, " ")
		head += word[:len(word)-len(trimmed)]
		word = trimmed
	}
	if name, arg, ok := strings.Cut(word, " "); ok {
		return c.completeLocation(head+name+" ", name, arg)
	}
	var out []string
	for _, cmd := range commands {
		for _, name := range append([]string{cmd.name}, cmd.aliases...) {
			if strings.HasPrefix(name, word) {
				out = append(out, head+name+" ")
			}
		}
	}
	sort.Strings(out)
	return out
}

// locationCommands take a location: a function, or FILE:LINE.
var locationCommands = map[string]bool{"break": true, "tbreak": true, "list": true}

// completeLocation completes the argument of a command that takes a
// location with the program's functions and its source files (as
// "FILE:"); other arguments are nothing sdm could know to offer.
func (c *Console) completeLocation(head, name, arg string) []string {
	cmd, err := lookup(name)
	if err != nil || !locationCommands[cmd.name] || strings.Contains(arg, " ") {
		return nil
	}
	syms := c.symbols()
	var out []string
	for _, f := range syms.Functions {
		if strings.HasPrefix(f, arg) {
			out = append(out, head+f)
		}
	}
	for _, f := range syms.Files {
		if strings.HasPrefix(f+":", arg) {
			out = append(out, head+f+":")
		}
	}
	return out
}

// symbolsWithin bounds the one question completion asks of a rank.
const symbolsWithin = 5 * time.Second

// symbols returns the program's functions and files, asked of the focus
// set's first rank once (every rank runs the same program) and kept; a
// rank that cannot answer (no gdb, not started) is asked again next time.
func (c *Console) symbols() wire.Symbols {
	c.mu.Lock()
	known, focus := c.known, c.focus
	c.mu.Unlock()
	if known != nil {
		return *known
	}
	if focus.Empty() {
		return wire.Symbols{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), symbolsWithin)
	defer cancel()
	groups, err := c.s.Command(ctx, wire.Single(focus.Min()), wire.OpSymbols, nil, symbolsWithin)
	if err != nil || len(groups) != 1 || groups[0].Status != wire.StatusOK {
		return wire.Symbols{}
	}
	syms, err := op.Symbols.DecodeAnswer(groups[0].Body)
	if err != nil {
		return wire.Symbols{}
	}
	c.mu.Lock()
	c.known = &syms
	c.mu.Unlock()
	return syms
}

func (c *Console) completeSets(head, word string) []string {
	c.mu.Lock()
	names := []string{"all"}
	for n := range c.sets {
		names = append(names, n)
	}
	c.mu.Unlock()
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, word) {
			out = append(out, head+n)
		}
	}
	sort.Strings(out)
	return out
}
