// Package frame brings radiographs and masks into the canonical frame
// (spec build.md §1): 1024×1024, greyscale 8-bit images and binary masks,
// plain resize, no cropping. It also defines CaseError, the failure of one
// build case, which every builder package returns so that a bad case is
// recorded with its reason code and never stops a build.
package frame

import "fmt"

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

// Fail returns a *CaseError with the given reason and formatted detail.
func Fail(reason, format string, args ...any) error {
	return &CaseError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}
