package appdb

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chexpercept/chexpercept/internal/job"
)

// TestCreateHelperProcess is the process TestCreateKilled kills: it
// starts a database, says so on descriptor 3 at the stage it is given,
// and waits there for its end.
func TestCreateHelperProcess(t *testing.T) {
	path, stage := os.Getenv("APPDB_HELPER_DB"), os.Getenv("APPDB_HELPER_STAGE")
	if path == "" {
		t.Skip("helper process for TestCreateKilled")
	}
	ready := os.NewFile(3, "ready")
	j := job.New(context.Background(), job.Options{Hook: func(point, temp string) {
		if point == stage {
			ready.WriteString(temp + "\n")
			select {} // until killed
		}
	}})
	c, err := Create(j, path, testSpec(testSchema, "FULL"))
	if err == nil {
		err = c.Publish()
	}
	t.Fatalf("the helper was not stopped at stage %q: %v", stage, err)
}

// TestCreateKilled: a process killed (SIGKILL) while it creates a
// database — its file still empty, or holding the schema in its log —
// leaves nothing at the database's name, and the next Create of that name
// succeeds and removes what the killed one left.
func TestCreateKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, stage := range []string{"db-created", "db-schema"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "app.sqlite")
			temp := killDuringCreate(t, p, stage)
			if _, err := os.Lstat(p); err == nil {
				t.Fatalf("a killed creation left %s", filepath.Base(p))
			}
			if _, err := os.Lstat(temp); err != nil {
				t.Fatalf("the killed creation's temporary file: %v", err)
			}
			db, err := Create(nil, p, testSpec(testSchema, "FULL"))
			if err != nil {
				t.Fatalf("create after a killed one: %v", err)
			}
			if err := db.Publish(); err != nil {
				t.Fatal(err)
			}
			if names := dirNames(t, dir); len(names) != 1 || names[0] != "app.sqlite" {
				t.Errorf("the folder holds %q, want app.sqlite only", names)
			}
		})
	}
}

// killDuringCreate runs Create of p in a helper process, kills it with
// SIGKILL at stage and returns the temporary file's name.
func killDuringCreate(t *testing.T, p, stage string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCreateHelperProcess$")
	cmd.Env = append(os.Environ(), "APPDB_HELPER_DB="+p, "APPDB_HELPER_STAGE="+stage)
	cmd.ExtraFiles = []*os.File{w}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("the helper did not reach stage %s: %v\n%s", stage, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return strings.TrimSuffix(line, "\n")
}

// TestCreateRemovesOnlyItsLeftovers: the leftovers Create removes are its
// own — an unlocked, empty or SQLite file of its temporary-name pattern,
// owned by the user — and nothing else beside the database: another
// file of that pattern (text, a link, a live creation's locked file) or
// of another pattern is kept byte for byte.
func TestCreateRemovesOnlyItsLeftovers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.sqlite")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Leftovers: an empty file and its journal, an SQLite file, an orphan log.
	write("app.sqlite.tmp-00000000000000aa", "")
	write("app.sqlite.tmp-00000000000000aa-journal", "j")
	write("app.sqlite.tmp-00000000000000bb", sqliteMagic+"rest of a database")
	write("app.sqlite.tmp-00000000000000cc-wal", "w")
	// Not ours.
	kept := map[string]string{
		"app.sqlite.tmp-00000000000000dd":   "a text file of the user's",
		"app.sqlite.tmp-0000000000000ee":    "", // 15 digits
		"app.sqlite.tmp-00000000000000FF":   "", // upper case
		"other.sqlite.tmp-0000000000000011": "", // another database's
		"app.sqlite.tmp":                    "",
	}
	for name, content := range kept {
		write(name, content)
	}
	target := filepath.Join(dir, "target")
	write("target", "")
	kept["target"] = ""
	if err := os.Symlink(target, filepath.Join(dir, "app.sqlite.tmp-0000000000000022")); err != nil {
		t.Fatal(err)
	}
	// A creation in flight holds its temporary file.
	live, err := Create(nil, filepath.Join(dir, "app.sqlite"), testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abandon()
	lt := filepath.Base(live.temp)
	want := map[string]bool{"app.sqlite.tmp-0000000000000022": true, lt: true, lt + "-wal": true, lt + "-shm": true, "app.sqlite": true}
	for name := range kept {
		want[name] = true
	}
	db, err := Create(nil, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Publish(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range dirNames(t, dir) {
		got[n] = true
		if !want[n] {
			t.Errorf("%s was not removed", n)
		}
	}
	for n := range want {
		if !got[n] {
			t.Errorf("%s was removed", n)
		}
	}
	for name, content := range kept {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
			t.Errorf("%s: %q, %v", name, b, err)
		}
	}
}

// TestPublishNeverReplaces: a file that appears at the database's name
// while it is created is kept, and the creation fails leaving nothing.
func TestPublishNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.sqlite")
	c, err := Create(nil, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("the user's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("publish over a file: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "the user's" {
		t.Errorf("the file became %q", b)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("the folder holds %q, want app.sqlite only", names)
	}
}

// TestCreateOnAJob: a creation registers its temporary file on the job
// it is given, whose hook sees the file at "db-created" and "db-schema".
// A job stopped before its commit point removes the file (RemoveTemps),
// and the creation then publishes nothing; a stopped job refuses a new
// creation. A job past its commit point publishes, and a published or
// abandoned creation leaves nothing registered.
func TestCreateOnAJob(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.sqlite")
	var points []string
	j := job.New(context.Background(), job.Options{Hook: func(point, temp string) {
		if strings.HasPrefix(point, "db-") {
			points = append(points, point+" "+temp)
		}
	}})
	c, err := Create(j, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db-created " + c.temp, "db-schema " + c.temp}; strings.Join(points, "\n") != strings.Join(want, "\n") {
		t.Errorf("hook points %q, want %q", points, want)
	}
	if j.Pending() != 1 {
		t.Errorf("%d temporaries registered, want the database's", j.Pending())
	}
	if !j.Stop() {
		t.Fatal("the job had passed its commit point")
	}
	j.RemoveTemps()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("after RemoveTemps the folder holds %q", names)
	}
	if err := c.Publish(); !errors.Is(err, job.ErrStopped) {
		t.Errorf("publish on a stopped job: %v", err)
	}
	if _, err := Create(j, p, testSpec(testSchema, "FULL")); !errors.Is(err, job.ErrStopped) {
		t.Errorf("create on a stopped job: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("the stopped job's creations left %q", names)
	}

	j = job.New(context.Background(), job.Options{})
	abandoned, err := Create(j, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	abandoned.Abandon()
	c, err = Create(j, p, testSpec(testSchema, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Commit(); err != nil {
		t.Fatal(err)
	}
	if j.Stop() {
		t.Error("a committed job stopped")
	}
	if err := c.Publish(); err != nil {
		t.Fatalf("publish past the commit point: %v", err)
	}
	if j.Pending() != 0 {
		t.Errorf("%d temporaries still registered", j.Pending())
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "app.sqlite" {
		t.Errorf("the folder holds %q, want app.sqlite only", names)
	}
}
