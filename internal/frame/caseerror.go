// Package frame brings radiographs and masks into the canonical frame
// (spec build.md §1): 1024×1024, greyscale 8-bit images and binary masks,
// plain resize, no cropping. It also defines CaseError, the failure of one
// build case, which every builder package returns so that a bad case is
// recorded with its reason code and never stops a build.
package frame

import (
	"errors"
	"fmt"

	"github.com/chexpercept/chexpercept/internal/safefile"
)

// Size is the side of the canonical frame.
const Size = 1024

// CaseError is a per-case build failure with a reason code of build.md §14
// (image_unreadable, mask_unreadable, lung_mask_empty, deformation_failed,
// …) and a human-readable detail.
type CaseError struct {
	Reason string
	Detail string
}

func (e *CaseError) Error() string {
	if e.Detail == "" {
		return e.Reason
	}
	return e.Reason + ": " + e.Detail
}

// Fail returns a *CaseError with the given reason and formatted detail,
// unless one of args is an error that safefile.Transient recognises (too
// many open files, an I/O error, an interrupted call …): that says nothing
// about the case, so Fail returns a *TransientError, which fails the
// command instead of skipping the case.
func Fail(reason, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	for _, a := range args {
		if err, ok := a.(error); ok && safefile.Transient(err) {
			return &TransientError{Detail: detail, Err: err}
		}
	}
	return &CaseError{Reason: reason, Detail: detail}
}

// TransientError is a failure to read a case's input for a reason that
// lies outside the file (safefile.Transient). It is not a *CaseError:
// the command stops with it, and a rerun reads the file again.
type TransientError struct {
	Detail string // names the file
	Err    error
}

func (e *TransientError) Error() string { return e.Detail }
func (e *TransientError) Unwrap() error { return e.Err }

// IsTransient reports whether err is or wraps a *TransientError, or is
// itself a transient failure (safefile.Transient).
func IsTransient(err error) bool {
	var te *TransientError
	return errors.As(err, &te) || safefile.Transient(err)
}
