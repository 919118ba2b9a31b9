//go:build unix

package review

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const unprivilegedEnv = "CHEXPERCEPT_TEST_UNPRIVILEGED"

// asUnprivileged re-runs the calling test in a child process as user
// nobody (uid 65534) when the tests run as root, because root writes
// through permission bits; it reports whether the child did the work (the
// caller then returns). Without the right to switch users it skips.
func asUnprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if os.Getenv(unprivilegedEnv) != "" {
		t.Fatal("the unprivileged child still runs as root")
	}
	tmp, err := os.MkdirTemp("", "chexpercept-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	// The test binary may sit in a directory only root can enter.
	bin := filepath.Join(tmp, "review.test")
	if err := copyFile(bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1", "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("running as root, and cannot start the test as an unprivileged user (root ignores permission bits): %v", err)
	}
	t.Logf("as uid 65534:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the unprivileged run failed (%v)", err)
	}
	return true
}

func copyFile(dst string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestOpenNotWritable: a review database that cannot be written is named
// with the reason (file or directory), not "not a chexpercept review
// database"; OpenReadOnly still reads it and creates nothing beside it.
func TestOpenNotWritable(t *testing.T) {
	if asUnprivileged(t) {
		return
	}
	fx := makeFixture(t, []string{"edema"}, 1, 1)
	for _, tc := range []struct {
		name             string
		fileMode, dirMod os.FileMode
		withWAL          bool // a -wal file with changes, and no -shm
		want             string
		wantRO           string // OpenReadOnly's error; "" for success
	}{
		{"read-only file", 0o444, 0o755, false, "review db DB: the file is not writable (permission denied)", ""},
		{"read-only directory", 0o600, 0o555, false, "review db DB: its directory DIR is not writable (SQLite keeps review.db-wal and review.db-shm beside the database)", ""},
		{"read-only file and directory", 0o444, 0o555, false, "review db DB: the file is not writable (permission denied)", ""},
		{"read-only directory with changes in -wal", 0o600, 0o555, true, "review db DB: its directory DIR is not writable",
			"review db DB: cannot be read without writing: its directory is not writable and review.db-wal holds changes not yet in the database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "review.db")
			if _, _, err := Init(db, fx.Cases, InitOptions{Reviewers: 2, Overlap: 1, Seed: 7, Workers: 1}); err != nil {
				t.Fatal(err)
			}
			if tc.withWAL {
				// Copy the database and its -wal while a writer holds it open.
				w, err := Open(db)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.SetLocked(context.Background(), true); err != nil {
					t.Fatal(err)
				}
				dir = t.TempDir()
				for _, suf := range []string{"", "-wal"} {
					data, err := os.ReadFile(db + suf)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "review.db"+suf), data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				w.Close()
				db = filepath.Join(dir, "review.db")
			}
			if err := os.Chmod(db, tc.fileMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.dirMod); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			names := func() string {
				ents, _ := os.ReadDir(dir)
				var n []string
				for _, e := range ents {
					n = append(n, e.Name())
				}
				return strings.Join(n, " ")
			}
			listed := names()
			fill := strings.NewReplacer("DB", db, "DIR", dir)

			_, err := Open(db)
			if err == nil || !strings.HasPrefix(err.Error(), fill.Replace(tc.want)) || !errors.Is(err, ErrNotWritable) {
				t.Errorf("Open: %v\nwant: %s…", err, fill.Replace(tc.want))
			}
			s, err := OpenReadOnly(db)
			if tc.wantRO != "" {
				if err == nil || !strings.HasPrefix(err.Error(), fill.Replace(tc.wantRO)) {
					t.Errorf("OpenReadOnly: %v\nwant: %s…", err, fill.Replace(tc.wantRO))
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenReadOnly: %v", err)
			}
			defer s.Close()
			if revs, err := s.Reviewers(context.Background()); err != nil || len(revs) != 2 {
				t.Errorf("reading a read-only database: %d reviewers, %v", len(revs), err)
			}
			if err := s.SetLocked(context.Background(), true); !errors.Is(err, ErrReadOnly) {
				t.Errorf("SetLocked: %v", err)
			}
			// review export and build --review-db read it too.
			if _, err := s.ExportJSONL(context.Background(), nil, filepath.Join(t.TempDir(), "reviews.jsonl")); err != nil {
				t.Errorf("export: %v", err)
			}
			if _, err := OpenDecisions(context.Background(), db); err != nil {
				t.Errorf("OpenDecisions: %v", err)
			}
			if tc.dirMod == 0o555 && names() != listed {
				t.Errorf("files beside the database: %s, before: %s", names(), listed)
			}
		})
	}
}
