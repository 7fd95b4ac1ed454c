package dlopen

import (
	"fmt"
	"strconv"
)

// The seed's two state variables (TotalView's TV::dlopen_always_recalculate
// and TV::dlopen_recalculate_on_match), as environment variables of the
// front end.
const (
	// EnvAlways is true for slow mode; false for medium when EnvOnMatch
	// holds a list, else fast. Unset, the mode is auto, sdm's default
	// (the seed's, true, made every load stop and reach the front end).
	EnvAlways = "SDM_DLOPEN_ALWAYS_RECALCULATE"
	// EnvOnMatch is the glob list of medium and auto mode.
	EnvOnMatch = "SDM_DLOPEN_RECALCULATE_ON_MATCH"
)

// Resolve works out a front end's setting from the environment (through
// lookupEnv, as os.LookupEnv) and the flags --dlopen-mode and
// --dlopen-match (nil when not given). A flag wins over the variable it
// stands for: --dlopen-mode over EnvAlways, --dlopen-match over
// EnvOnMatch. Notes tell the user about parts of the setting that will
// have no effect.
func Resolve(lookupEnv func(string) (string, bool), mode, match *string) (Setting, []string, error) {
	s := Default()
	always, alwaysSet := lookupEnv(EnvAlways)
	onMatch, _ := lookupEnv(EnvOnMatch)
	var err error
	if s.Match, err = ParseMatch(onMatch); err != nil {
		return Setting{}, nil, fmt.Errorf("%s: %w", EnvOnMatch, err)
	}
	if alwaysSet {
		slow, err := strconv.ParseBool(always)
		if err != nil {
			return Setting{}, nil, fmt.Errorf("%s=%q: want true (slow mode) or false (medium with %s, else fast)", EnvAlways, always, EnvOnMatch)
		}
		switch {
		case slow:
			s.Mode = Slow
		case s.Match.Empty():
			s.Mode = Fast
		default:
			s.Mode = Medium
		}
	}
	if match != nil {
		if s.Match, err = ParseMatch(*match); err != nil {
			return Setting{}, nil, fmt.Errorf("--dlopen-match: %w", err)
		}
	}
	if mode != nil {
		if s.Mode, err = ParseMode(*mode); err != nil {
			return Setting{}, nil, fmt.Errorf("--dlopen-mode: %w", err)
		}
	}
	return s, s.notes(), nil
}

// notes warns about a setting that will not do what it seems to ask.
func (s Setting) notes() []string {
	switch {
	case (s.Mode == Slow || s.Mode == Fast) && !s.Match.Empty():
		return []string{fmt.Sprintf("the dlopen match list %s is used only in medium and auto mode, and the mode is %s (--dlopen-mode medium or auto uses it)", s.Match, s.Mode)}
	case s.Mode == Medium && s.Match.Empty():
		return []string{"dlopen mode medium with an empty match list reports no load: each load still stops the process, and breakpoints in new libraries are planted at the next stop, as in fast mode"}
	}
	return nil
}
