package outdir

import "errors"

// ErrBusy is matched (errors.Is) by the error of Lock when another process
// writes the directory.
var ErrBusy = errors.New("output directory locked by another process")

// busyError says who holds the directory, and is ErrBusy.
type busyError struct{ msg string }

func (e *busyError) Error() string        { return e.msg }
func (e *busyError) Is(target error) bool { return target == ErrBusy }
