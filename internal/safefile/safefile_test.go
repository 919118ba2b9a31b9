package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpen: anything but a regular file is refused at once — a FIFO
// without a writer would block a plain open forever, so this test hangs
// (and fails by the test timeout) on a blocking implementation.
func TestOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	reg := write(t, dir, "reg.txt", []byte("hello"))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifolink")
	if err := os.Symlink(fifo, fifoLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		path  string
		links Links
		want  string // "" = opens
		is    error
	}{
		{"regular", reg, Follow, "", nil},
		{"regular nofollow", reg, NoFollow, "", nil},
		{"fifo", fifo, Follow, "not a regular file (named pipe)", ErrNotRegular},
		{"fifo nofollow", fifo, NoFollow, "not a regular file (named pipe)", ErrNotRegular},
		{"link to fifo", fifoLink, Follow, "not a regular file (named pipe)", ErrNotRegular},
		{"directory", dir, Follow, "not a regular file (directory)", ErrNotRegular},
		{"device", "/dev/null", Follow, "not a regular file (character device)", ErrNotRegular},
		{"link followed", link, Follow, "", nil},
		{"link refused", link, NoFollow, "is a symbolic link", ErrSymlink},
		{"missing", filepath.Join(dir, "nope"), Follow, "no such file", os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Open(tc.path, tc.links)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("Open(%s) succeeded, want %q", tc.path, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) || !errors.Is(err, tc.is) {
				t.Errorf("Open(%s) = %v, want it to name the path, say %q and wrap %v", tc.path, err, tc.want, tc.is)
			}
		})
		if tc.links != Follow {
			continue
		}
		// CheckRegular gives the same reason, bare, without opening.
		t.Run(tc.name+"/check", func(t *testing.T) {
			err := CheckRegular(tc.path)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckRegular: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.path) || !errors.Is(err, tc.is) {
				t.Errorf("CheckRegular(%s) = %v, want the bare reason %q wrapping %v", tc.path, err, tc.want, tc.is)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "f", []byte("0123456789"))
	for _, tc := range []struct {
		limit int64
		want  string
	}{
		{10, ""},
		{100, ""},
		{9, "file is 10 bytes, more than the 9-byte limit"},
		{0, "file is 10 bytes, more than the 0-byte limit"},
	} {
		b, err := ReadFile(p, tc.limit, Follow)
		switch {
		case tc.want == "" && (err != nil || string(b) != "0123456789"):
			t.Errorf("limit %d: %q, %v", tc.limit, b, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrTooLarge)):
			t.Errorf("limit %d: error %v, want %q", tc.limit, err, tc.want)
		}
	}
	// A file read through a name that is not a regular file never blocks.
	if runtime.GOOS != "windows" {
		if _, err := ReadFile("/dev/zero", 1<<20, Follow); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(/dev/zero) = %v, want not a regular file", err)
		}
	}
}
