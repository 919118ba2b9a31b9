//go:build !unix

package review

// dirNotWritable cannot tell without writing; SQLite's own error is shown.
func dirNotWritable(string) bool { return false }
