//go:build !unix

package appdb

// statFree is freeBytes where free space is not looked up: unknown.
func statFree(string) (uint64, bool) { return 0, false }

// readOnlyFS is not told where the file system's flags are not looked
// up.
func readOnlyFS(string) bool { return false }
