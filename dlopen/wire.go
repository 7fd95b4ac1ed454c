package dlopen

import "github.com/sdm-hpc/sdm/wire"

// Wire is the command that gives a rank this whole setting.
func (s Setting) Wire() wire.Dlopen {
	return wire.Dlopen{Mode: string(s.Mode), Match: s.Match.String(), SetMatch: true}
}

// Apply returns s changed as the command d asks: its mode unless empty,
// its list when d.SetMatch. On an error s comes back unchanged.
func (s Setting) Apply(d wire.Dlopen) (Setting, error) {
	out := s
	if d.Mode != "" {
		m, err := ParseMode(d.Mode)
		if err != nil {
			return s, err
		}
		out.Mode = m
	}
	if d.SetMatch {
		m, err := ParseMatch(d.Match)
		if err != nil {
			return s, err
		}
		out.Match = m
	}
	return out, nil
}

// Answer is the setting as a rank reports it.
func (s Setting) Answer(warning string) wire.Dlopen {
	return wire.Dlopen{Mode: string(s.Mode), Match: s.Match.String(), Warning: warning}
}
