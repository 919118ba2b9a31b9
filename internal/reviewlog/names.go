package reviewlog

import (
	"fmt"
	"regexp"

	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// namePattern is the rule for a reviewer's name, which the decision log,
// the review app's pages and sheets and the annotator folders of an
// import carry: 1 to 64 ASCII letters, digits, dots, underscores and
// hyphens. Such a name is safe as a folder name, in a CSV cell, in HTML
// and on a terminal: no space, line break, control or bidirectional
// character can be in it.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CheckName refuses a reviewer's name that does not follow the rule
// (1 to 64 letters, digits, dots, underscores or hyphens); what says how
// the caller knows the name ("reviewer name"). The error quotes the name with
// its control and format characters escaped (textsafe.OneLine).
func CheckName(what, name string) error {
	if namePattern.MatchString(name) {
		return nil
	}
	return fmt.Errorf(`%s "%s": want 1 to 64 letters, digits, dots, underscores or hyphens`, what, textsafe.OneLine(name))
}
