package wire

// Dlopen is a rank's dlopen setting (see package dlopen). In a command,
// an empty Mode leaves the mode as it is, and Match is taken only when
// SetMatch, so that changing the mode keeps the list. In an answer,
// Warning says what the setting leaves out, such as libcuda loaded but not
// in medium mode's list.
type Dlopen struct {
	Mode     string `json:"mode"`
	Match    string `json:"match"`
	SetMatch bool   `json:"-"`
	Warning  string `json:"warning,omitempty"`
}

// Loaded names the libraries a load added, by path.
type Loaded struct {
	Libraries []string `json:"libraries"`
}
