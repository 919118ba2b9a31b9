package benchdir_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchdir"
)

// TestSums: SHA256SUMS lines are parsed strictly (a bad line is named by
// number), and Check tells a listed file with its hash from a changed
// and an unlisted one, each wrapping ErrChanged and naming the file.
func TestSums(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, data, err string
	}{
		{"two lines", h + "  chexpercept.json\n" + strings.Repeat("01", 32) + "  chexpercept/k/xray.png\n", ""},
		{"one space", h + " chexpercept.json\n", "line 1"},
		{"short hash", h[:62] + "  chexpercept.json\n", "line 1"},
		{"upper-case hex", strings.ToUpper(h) + "  a\n", "line 1"},
		{"no path", h + "  \n", "line 1"},
		{"listed twice", h + "  a\n" + h + "  a\n", "line 2: a is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := benchdir.ParseSums([]byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || s.Len() != 2 {
				t.Fatalf("%v, %d files", err, s.Len())
			}
		})
	}
	s, err := benchdir.ParseSums([]byte(h + "  chexpercept/k/xray.png\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = "bench"
	if err := s.Check("chexpercept/k/xray.png", h); err != nil {
		t.Errorf("listed file with its hash: %v", err)
	}
	for _, tc := range []struct{ rel, sha, want string }{
		{"chexpercept/k/xray.png", strings.Repeat("00", 32), "bench/chexpercept/k/xray.png: its SHA-256 is not the one SHA256SUMS lists"},
		{"chexpercept/k/other.png", h, "bench/chexpercept/k/other.png: not listed in SHA256SUMS"},
	} {
		err := s.Check(tc.rel, tc.sha)
		if !errors.Is(err, benchdir.ErrChanged) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Check(%s): %v, want one line starting %q", tc.rel, err, tc.want)
		}
	}
	if _, err := benchdir.ReadSums(t.TempDir()); !errors.Is(err, benchdir.ErrNoSums) {
		t.Errorf("no SHA256SUMS: %v, want ErrNoSums", err)
	}
}

// TestSumsDotSlash: lines written "./<path>", as sha256sum writes them
// when given ./-prefixed paths, name the same files as without the
// prefix (a file listed both ways is listed twice).
func TestSumsDotSlash(t *testing.T) {
	h, other := strings.Repeat("ab", 32), strings.Repeat("01", 32)
	s, err := benchdir.ParseSums([]byte(h + "  ./chexpercept.json\n" + other + "  ./chexpercept/k/xray.png\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check("chexpercept.json", h); err != nil {
		t.Errorf("./chexpercept.json: %v", err)
	}
	if err := s.Check("chexpercept/k/xray.png", other); err != nil {
		t.Errorf("./chexpercept/k/xray.png: %v", err)
	}
	if err := s.Check("chexpercept/k/xray.png", h); !errors.Is(err, benchdir.ErrChanged) || strings.Contains(err.Error(), "not listed") {
		t.Errorf("a changed ./-listed file: %v", err)
	}
	if _, err := benchdir.ParseSums([]byte(h + "  a\n" + h + "  ./a\n")); err == nil || !strings.Contains(err.Error(), "line 2: a is listed twice") {
		t.Errorf("a file listed with and without ./: %v", err)
	}
}
