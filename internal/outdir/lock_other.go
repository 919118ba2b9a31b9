//go:build !unix

package outdir

// Lock is a no-op where flock is unavailable: two processes writing one
// output directory are not detected there.
func Lock(dir string) (unlock func(), err error) { return func() {}, nil }
