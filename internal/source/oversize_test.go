package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark/benchtest"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/imagefile"
)

// TestOversizeImageRefusedBeforeReading: a source image or lung mask
// larger than the image file limit (a valid PNG header, then a sparse
// tail) is refused by the header check review init applies and by the
// digests build and review init compute, before its bytes are read; a
// file of exactly the limit is still hashed.
func TestOversizeImageRefusedBeforeReading(t *testing.T) {
	dir := t.TempDir()
	sized := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, benchtest.FlatPNG(false), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	over := sized("over.png", imagefile.MaxFileBytes+1)
	huge := sized("huge.png", 3<<30)
	limit := sized("limit.png", imagefile.MaxFileBytes)
	for _, tc := range []struct {
		name, path, reason string
		f                  func(string) error
	}{
		{"CheckImage, one byte over", over, "image_unreadable", CheckImage},
		{"CheckImage, 3 GiB", huge, "image_unreadable", CheckImage},
		{"ImageSHA256, one byte over", over, "image_unreadable", func(p string) error { _, err := ImageSHA256(&Case{Image: p}); return err }},
		{"ImageSHA256, 3 GiB", huge, "image_unreadable", func(p string) error { _, err := ImageSHA256(&Case{Image: p}); return err }},
		{"lung mask, 3 GiB", huge, "mask_unreadable", func(p string) error { _, err := fileSHA256(p, "mask_unreadable", "lung mask"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f(tc.path)
			if err == nil {
				t.Fatalf("%s accepted", filepath.Base(tc.path))
			}
			var ce *frame.CaseError
			if !errors.As(err, &ce) || ce.Reason != tc.reason {
				t.Errorf("error %v: want the case skipped as %s", err, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), "more than the 67108864-byte limit") {
				t.Errorf("error %q: want the file and the limit named", err)
			}
		})
	}
	if _, err := ImageSHA256(&Case{Image: limit}); err != nil {
		t.Errorf("a file of exactly the limit: %v", err)
	}
}
