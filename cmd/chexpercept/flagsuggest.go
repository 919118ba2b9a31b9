package main

import (
	"fmt"
	"github.com/chexpercept/chexpercept/internal/editdist"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestDistance is the largest edit distance at which a flag is
// suggested for an unknown one (cobra's for commands is 2).
const suggestDistance = 2

// suggestFlag is the command tree's flag error function: an unknown
// --flag gets "did you mean --name?" naming the command's flags nearest to
// it (by edit distance, or the one it is a prefix of); other flag errors
// pass unchanged. Hidden flags (older spellings) are never suggested.
func suggestFlag(cmd *cobra.Command, err error) error {
	const prefix = "unknown flag: --"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	typed := strings.TrimPrefix(msg, prefix)
	if name, _, ok := strings.Cut(typed, "="); ok {
		typed = name
	}
	if s := nearestFlags(cmd.Flags(), typed); len(s) > 0 {
		return fmt.Errorf("%w; did you mean --%s?", err, strings.Join(s, " or --"))
	}
	return err
}

// nearestFlags lists the visible flags of fs nearest to typed, in the
// order fs lists them: those at the smallest edit distance within
// suggestDistance, else those typed is a prefix of.
func nearestFlags(fs *pflag.FlagSet, typed string) []string {
	best := suggestDistance + 1
	var near, prefixed []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editdist.Distance(strings.ToLower(typed), strings.ToLower(f.Name))
		switch {
		case d < best:
			best, near = d, []string{f.Name}
		case d == best:
			near = append(near, f.Name)
		}
		if len(typed) >= 3 && strings.HasPrefix(f.Name, typed) {
			prefixed = append(prefixed, f.Name)
		}
	})
	if len(near) > 0 {
		return near
	}
	return prefixed
}
