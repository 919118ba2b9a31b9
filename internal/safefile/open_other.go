//go:build !unix

package safefile

// Elsewhere the stat checks before and after opening carry the rule.
const (
	nonBlock = 0
	noFollow = 0
)

func isLoopErr(error) bool { return false }
