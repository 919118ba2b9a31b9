package benchmark

import (
	"fmt"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// NamePattern is the rule for the names people give to things a run or
// review shows and files carry — reviewers, domain groups, the label part
// of a run name: 1 to 64 ASCII letters, digits, dots, underscores and
// hyphens. Such a name is safe as a folder name, in a CSV cell, in HTML
// and on a terminal: no space, line break, control or bidirectional
// character can be in it.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CheckName refuses a name that does not follow NamePattern; what says
// what the name is for ("reviewer name"). The error quotes the name with
// its control and format characters escaped (textsafe.OneLine).
func CheckName(what, name string) error {
	if NamePattern.MatchString(name) {
		return nil
	}
	return fmt.Errorf(`%s "%s": want 1 to 64 letters, digits, dots, underscores or hyphens`, what, textsafe.OneLine(name))
}
