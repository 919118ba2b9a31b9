//go:build !linux

package appdb

// renameNoReplace moves from to to unless to exists (an error matching
// fs.ErrExist then), by a hard link and an unlink.
func renameNoReplace(from, to string) error { return linkNoReplace(from, to) }
