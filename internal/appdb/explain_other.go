//go:build !unix

package appdb

// statFree is freeBytes where free space is not looked up: unknown.
func statFree(string) (uint64, bool) { return 0, false }
