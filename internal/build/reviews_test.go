package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/reviewlog"
	"github.com/chexpercept/chexpercept/internal/source"
)

func TestWarnUnknownReviews(t *testing.T) {
	t.Parallel()
	cases := []*source.Case{{CaseID: "1", Lesion: "edema"}, {CaseID: "2", Lesion: "edema"}}
	many := []string{"edema_1"}
	for i := 0; i < 7; i++ {
		many = append(many, fmt.Sprintf("cardiomegaly_%d", i))
	}
	for _, tc := range []struct {
		name string
		keys []string
		want string // "" = no warning
	}{
		{"all candidates", []string{"edema_2", "edema_1"}, ""},
		{"no decisions", nil, ""},
		{"one unknown", []string{"edema_1", "effusion_1"},
			"warning: 1 of 2 reviewed key_id(s) are not candidates of this source: effusion_1\n"},
		{"first few of many", many,
			"warning: 7 of 8 reviewed key_id(s) are not candidates of this source: cardiomegaly_0, cardiomegaly_1, cardiomegaly_2, cardiomegaly_3, cardiomegaly_4, … (2 more)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			warnUnknownReviews(&w, tc.keys, cases)
			if w.String() != tc.want {
				t.Errorf("got %q\nwant %q", w.String(), tc.want)
			}
		})
	}
}

// TestReviewsMatchingNoCandidate builds with a reviews.jsonl whose key_ids
// are all foreign: the build warns about them, fails with a global error
// and writes no chexpercept.json (an empty benchmark is invalid).
func TestReviewsMatchingNoCandidate(t *testing.T) {
	t.Parallel()
	src := phantomManifest(t)
	dir := t.TempDir()
	revPath := filepath.Join(dir, "reviews.jsonl")
	var lines []string
	for i := 0; i < 3; i++ {
		lines = append(lines, fmt.Sprintf(`{"key_id":"edema_other%d","decision":"accept"}`, i))
	}
	if err := os.WriteFile(revPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := reviewlog.ReadLog(revPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench")
	opt := smallOptions(src, out, 1)
	opt.Decisions, opt.ReviewMode = log, ModeReviews
	var stderr bytes.Buffer
	opt.Stderr = &stderr
	_, err = Run(context.Background(), opt)
	var ge *GlobalError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "not_accepted:missing") || !strings.Contains(err.Error(), "empty benchmark") {
		t.Fatalf("got %v, want a global error about the empty benchmark", err)
	}
	if !strings.Contains(stderr.String(), "warning: 3 of 3 reviewed key_id(s) are not candidates of this source: edema_other0, edema_other1, edema_other2\n") {
		t.Errorf("stderr lacks the unknown key_id warning:\n%s", stderr.String())
	}
	for _, f := range []string{benchmarkJSON, sumsFile} {
		if _, err := os.Stat(filepath.Join(out, f)); !os.IsNotExist(err) {
			t.Errorf("%s: written by a build without records (%v)", f, err)
		}
	}
}
