package main

import "github.com/chexpercept/chexpercept/internal/outdir"

// lockOutDir takes the lock of the output directory dir (outdir.Lock) for
// the rest of the command: a second chexpercept process writing the same
// folder is refused at once, with exit status 2.
func lockOutDir(dir string) (unlock func(), err error) {
	unlock, err = outdir.Lock(dir)
	if err != nil {
		return nil, withExit(2, err)
	}
	return unlock, nil
}
