package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/eval"
)

// TestCacheDirLinks: the default cache folder ($XDG_CACHE_HOME/chexpercept)
// planted as a link to another folder is refused before anything is
// written there; the same link named with --cache-dir is the user's
// choice and is followed; $XDG_CACHE_HOME itself may be a link.
func TestCacheDirLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		linkXDG  bool // $XDG_CACHE_HOME is a link to a folder
		linkOurs bool // $XDG_CACHE_HOME/chexpercept is a link to a folder
		named    bool // --cache-dir names $XDG_CACHE_HOME/chexpercept
		wantErr  string
	}{
		{"default folder is a link", false, true, false, "is a symbolic link; the default cache folder is not used through a link: remove the link, or name the folder it leads to as the cache directory (--cache-dir)"},
		{"named link", false, true, true, ""},
		{"XDG_CACHE_HOME is a link", true, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			elsewhere := filepath.Join(tmp, "elsewhere")
			if err := os.Mkdir(elsewhere, 0o755); err != nil {
				t.Fatal(err)
			}
			xdg := filepath.Join(tmp, "xdg")
			switch {
			case tc.linkXDG:
				if err := os.Symlink(elsewhere, xdg); err != nil {
					t.Fatal(err)
				}
			case tc.linkOurs:
				if err := os.Mkdir(xdg, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(elsewhere, filepath.Join(xdg, "chexpercept")); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"eval", "--benchmark", genBench, "--provider", "baseline", "--model", "random",
				"--out", filepath.Join(tmp, "results"), "--limit", "1"}
			if tc.named {
				args = append(args, "--cache-dir", filepath.Join(xdg, "chexpercept"))
			}
			_, stderr, code := runCLIWithEnv(t, append(os.Environ(), "XDG_CACHE_HOME="+xdg), args...)
			memo := filepath.Join(elsewhere, eval.MemoFile)
			if tc.linkXDG {
				memo = filepath.Join(elsewhere, "chexpercept", eval.MemoFile)
			}
			_, memoErr := os.Lstat(memo)
			if tc.wantErr != "" {
				if code != 2 || !strings.Contains(stderr, tc.wantErr) {
					t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.wantErr)
				}
				if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
					t.Errorf("the folder the link leads to holds %d entries, want none", len(entries))
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if memoErr != nil {
				t.Errorf("the memo was not written where the link leads: %v", memoErr)
			}
		})
	}
}

// TestCacheDirNamedOnCreation: the run that creates the default cache
// folder names it, with the flag that keeps it elsewhere; the next run,
// and a run with --cache-dir, say nothing of it.
func TestCacheDirNamedOnCreation(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	xdg := filepath.Join(tmp, "xdg")
	env := append(os.Environ(), "XDG_CACHE_HOME="+xdg)
	run := func(extra ...string) string {
		args := append([]string{"eval", "--benchmark", genBench, "--provider", "baseline", "--model", "random",
			"--out", filepath.Join(tmp, "results"), "--limit", "1"}, extra...)
		_, stderr, code := runCLIWithEnv(t, env, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		return stderr
	}
	want := "notice: created the cache folder " + filepath.Join(xdg, "chexpercept") + ", outside the run, for " + eval.MemoFile
	if first := run(); !strings.Contains(first, want) || !strings.Contains(first, "--cache-dir DIR keeps it elsewhere") {
		t.Errorf("the first run does not name the cache folder it created (%q):\n%s", want, first)
	}
	for _, extra := range [][]string{nil, {"--cache-dir", filepath.Join(tmp, "beside")}} {
		if again := run(extra...); strings.Contains(again, "cache folder") {
			t.Errorf("%v: a run that created no default cache folder speaks of one:\n%s", extra, again)
		}
	}
}
