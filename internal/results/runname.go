package results

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// RunName is <provider>_<label>[_no_thinking][_strict]: strict for a run
// under the strict parse mode.
func RunName(providerName, label string, noThinking, strict bool) string {
	s := providerName + "_" + label
	if noThinking {
		s += "_no_thinking"
	}
	if strict {
		s += "_strict"
	}
	return s
}

// maxRunName is the longest run name: it names a folder, and file
// systems allow 255 bytes.
const maxRunName = 255

// CheckRunName refuses, before anything is written, a run name that
// cannot name a folder: empty, a character outside letters, digits, '.',
// '_' and '-' (the rule of registry aliases), a leading '.', or too long.
func CheckRunName(name string) error {
	switch {
	case name == "":
		return errors.New("run name is empty")
	case strings.IndexFunc(name, notRunNameRune) >= 0:
		return fmt.Errorf("run name %q must use only letters, digits, '.', '_' and '-' (it names a folder)", textsafe.OneLine(name))
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("run name %q must not start with '.' (it names a folder)", textsafe.OneLine(name))
	}
	if len(name) > maxRunName {
		return fmt.Errorf("run name %s… is %d bytes, more than the %d a folder name may hold; register the model under a shorter alias (a models file)",
			textsafe.OneLine(name[:40]), len(name), maxRunName)
	}
	return nil
}

// notRunNameRune reports a character a run name may not hold.
func notRunNameRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
}
