package build

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/outdir"
	"github.com/chexpercept/chexpercept/internal/outdir/outdirtest"
	"github.com/chexpercept/chexpercept/internal/source"
)

// tree makes files ("…/" suffix: directory, "->x": link to x) under root.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(rel, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

const (
	k1          = "edema_ph0001_positive_0"
	k2          = "edema_ph0002_negative_0"
	testMarker  = `{"written_by": "chexpercept build", "source": "/src/m.jsonl", "source_sha256": "aa", "pending_keys": []}`
	testPending = `{"written_by": "chexpercept build", "source": "/src/m.jsonl", "source_sha256": "aa", "pending_keys": ["` + k2 + `"]}`
	testSums    = "00  chexpercept.json\n00  chexpercept/" + k1 + "/detection_qa/xray.png\n00  masks/" + k1 + "/a.png\n"
)

// finished is a hand-made finished build: marker, SHA256SUMS and the
// files it lists.
func finished() map[string]string {
	return map[string]string{
		markerRelPath: testMarker, sumsFile: testSums, benchmarkJSON: "{}", infoJSON: `{"source_sha256": "aa"}`,
		"chexpercept/" + k1 + "/detection_qa/xray.png": "png", "masks/" + k1 + "/a.png": "png",
		"work/" + k1 + "/case.json": "{}",
	}
}

func with(base map[string]string, extra map[string]string, drop ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m
}

// TestReadOwnership checks which directories a build accepts, and that a
// refusal is one line naming the entry at fault and changes nothing.
func TestReadOwnership(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		files  map[string]string // nil: the directory does not exist
		fresh  bool
		legacy bool
		entry  string // the refused entry ("" accepted)
	}{
		{"absent", nil, true, false, ""},
		{"empty", map[string]string{}, true, false, ""},
		{"killed while claiming", map[string]string{"work/": ""}, true, false, ""},
		{"killed while writing the marker", map[string]string{"work/" + markerName + ".tmp-123": "{"}, true, false, ""},
		{"finished build", finished(), false, false, ""},
		{"debris of an interrupted write", with(finished(), map[string]string{"chexpercept.json.tmp-1": "x", "chexpercept/.staging-x-1/a.png": "x", "masks/.staging-old-y-2/": ""}), false, false, ""},
		{"pending folder", with(finished(), map[string]string{markerRelPath: testPending, "chexpercept/" + k2 + "/detection_qa/xray.png": "png"}), false, false, ""},
		{"inspect view", with(finished(), map[string]string{"inspect/" + k1 + "/summary.txt": "s", "inspect/" + k1 + "/steps/x.png": "p"}), false, false, ""},
		{"finished build without marker", with(finished(), nil, markerRelPath), false, true, ""},
		{"foreign files", map[string]string{"notes.txt": "x", "masks/mine.png": "x"}, false, false, "masks"},
		{"phantom set", map[string]string{".chexpercept-phantom": "x", "images/ph0001.png": "x", "masks/ph0001_heart.png": "x", "manifest.jsonl": "{}"}, false, false, ".chexpercept-phantom"},
		{"only work/ with something else", map[string]string{"work/x": "x"}, false, false, "work"},
		{"foreign top-level file", with(finished(), map[string]string{"README": "x"}), false, false, "README"},
		{"unlisted file in a bundle folder", with(finished(), map[string]string{"chexpercept/" + k1 + "/note.txt": "x"}), false, false, "chexpercept/" + k1 + "/note.txt"},
		{"unrecorded empty bundle folder", with(finished(), map[string]string{"chexpercept/" + k2 + "/": ""}), false, false, "chexpercept/" + k2},
		{"file in the bundle", with(finished(), map[string]string{"masks/x.png": "x"}), false, false, "masks/x.png"},
		{"link in the bundle", with(finished(), map[string]string{"masks/" + k2: "->/"}), false, false, "masks/" + k2},
		{"linked bundle", with(finished(), map[string]string{"chexpercept": "->/"}, "chexpercept/"+k1+"/detection_qa/xray.png"), false, false, "chexpercept"},
		{"linked work", map[string]string{"work": "->/"}, false, false, "work"},
		{"foreign file in an inspect view", with(finished(), map[string]string{"inspect/" + k1 + "/summary.txt": "s", "inspect/" + k1 + "/my.doc": "x"}), false, false, "inspect/" + k1 + "/my.doc"},
		{"build_info.json without SHA256SUMS", with(finished(), nil, markerRelPath, sumsFile), false, false, infoJSON},
		{"someone else's build_info.json", with(finished(), map[string]string{infoJSON: `{"x": 1}`}, markerRelPath), false, false, infoJSON},
		{"unreadable marker", with(finished(), map[string]string{markerRelPath: `{"written_by": "someone"}`}), false, false, markerRelPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bench")
			if tc.files != nil {
				os.Mkdir(out, 0o755)
				tree(t, out, tc.files)
			}
			var before map[string]string
			if tc.files != nil {
				before = outdirtest.Snapshot(t, out)
			}
			o, err := readOwnership(out)
			if tc.files != nil {
				outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, out))
			}
			if tc.entry != "" {
				var r *outdir.Refused
				if !errors.As(err, &r) || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), tc.entry) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want a one-line refusal naming %s and %s", err, out, tc.entry)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if o.fresh != tc.fresh || o.legacy != tc.legacy {
				t.Errorf("fresh %v legacy %v, want %v %v", o.fresh, o.legacy, tc.fresh, tc.legacy)
			}
		})
	}
}

// TestRemoveStaleOnlyRecorded: stale-entry cleanup removes a bundle folder
// only when a build recorded it (SHA256SUMS or the marker's pending keys).
func TestRemoveStaleOnlyRecorded(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	tree(t, out, map[string]string{
		"chexpercept/a/x.png": "1", "chexpercept/b/x.png": "2", "chexpercept/c/x.png": "3",
		"masks/a/m.png": "1", "masks/c/m.png": "3",
	})
	own := &ownership{pending: map[string]bool{"b": true}, folders: map[string]bool{"chexpercept/a": true, "masks/a": true}}
	a := &assembly{opt: Options{Out: out}, own: own}
	if err := a.removeStale(); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{"chexpercept/a": false, "chexpercept/b": false, "masks/a": false, "chexpercept/c/x.png": true, "masks/c/m.png": true} {
		_, err := os.Stat(filepath.Join(out, rel))
		if got := err == nil; got != want {
			t.Errorf("%s exists: %v, want %v", rel, got, want)
		}
	}
}

// TestCheckSourceTree: the output directory may sit beside the source file
// but not inside a folder of its images or masks, and may not hold a
// source file.
func TestCheckSourceTree(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree(t, root, map[string]string{
		"src/manifest.jsonl": "{}", "src/images/a.png": "x", "src/masks/a_lung.png": "x",
		"bench/work/x": "x", "bench/chexpercept/k/a.png": "x", "imglink": "->src/images", "benchlink": "->bench/chexpercept",
	})
	src := filepath.Join(root, "src", "manifest.jsonl")
	cases := []*source.Case{{Image: filepath.Join(root, "src/images/a.png"), LungMasks: &source.LungPaths{Right: filepath.Join(root, "src/masks/a_lung.png"), Left: filepath.Join(root, "src/masks/a_lung.png")}}}
	inBench := []*source.Case{{Image: filepath.Join(root, "bench/chexpercept/k/a.png")}}
	viaLink := []*source.Case{{Image: filepath.Join(root, "benchlink/k/a.png")}}
	for _, tc := range []struct {
		name  string
		out   string
		cases []*source.Case
		fresh bool
		bad   string
	}{
		{"beside the source file", "src/bench", cases, true, ""},
		{"elsewhere", "bench", cases, false, ""},
		{"the image folder", "src/images", cases, false, "lies inside"},
		{"inside the image folder", "src/images/bench", cases, true, "lies inside"},
		{"inside the image folder through a link", "imglink/new", cases, true, "lies inside"},
		{"holding an image", "bench", inBench, false, "a file of the source"},
		{"holding an image named through a link", "bench", viaLink, false, "a file of the source"},
		{"holding the source file", "src", cases, false, "a file of the source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSourceTree(filepath.Join(root, filepath.FromSlash(tc.out)), src, tc.cases, tc.fresh)
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *outdir.Refused
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("err = %v, want a refusal: %s", err, tc.bad)
			}
		})
	}
}

// TestBuildRefusesForeignOutput runs whole builds (of two lesions) into
// directories the build did not make: each exits with a global error
// (exit 2) and leaves every file's bytes and modification time as they
// were.
func TestBuildRefusesForeignOutput(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	src := phantomManifest(t)
	phantomDir := filepath.Dir(src)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string) (source, out string)
		want  string
	}{
		{"masks/ and chexpercept/ folders of someone else", func(t *testing.T, root string) (string, string) {
			out := filepath.Join(root, "out")
			tree(t, out, map[string]string{"masks/mine.png": "mine", "chexpercept/edema_x_positive_0/notes.txt": "mine", "chexpercept.json": "{}"})
			return src, out
		}, "not made by chexpercept build"},
		{"--out equal to the source directory", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "phantom")
			outdirtest.CopyTree(t, phantomDir, dir)
			return filepath.Join(dir, "manifest.jsonl"), dir
		}, "not made by chexpercept build"},
		{"a link to the source directory", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "phantom")
			outdirtest.CopyTree(t, phantomDir, dir)
			os.Symlink(dir, filepath.Join(root, "link"))
			return filepath.Join(dir, "manifest.jsonl"), filepath.Join(root, "link")
		}, "not made by chexpercept build"},
		{"inside the source's image folder", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(root, "phantom")
			outdirtest.CopyTree(t, phantomDir, dir)
			return filepath.Join(dir, "manifest.jsonl"), filepath.Join(dir, "images", "bench")
		}, "which holds the source's images or masks"},
		{"a finished build with a file of someone else", func(t *testing.T, root string) (string, string) {
			out := filepath.Join(root, "bench")
			outdirtest.CopyTree(t, ref, out)
			tree(t, out, map[string]string{"notes.txt": "mine"})
			return src, out
		}, `holds "notes.txt"`},
		{"a finished build of another source", func(t *testing.T, root string) (string, string) {
			out := filepath.Join(root, "bench")
			outdirtest.CopyTree(t, ref, out)
			dir := filepath.Join(root, "phantom")
			outdirtest.CopyTree(t, phantomDir, dir)
			data, _ := os.ReadFile(src)
			tree(t, dir, map[string]string{"other.jsonl": string(data) + "\n"})
			return filepath.Join(dir, "other.jsonl"), out
		}, "holds the build of "},
		{"a file", func(t *testing.T, root string) (string, string) {
			tree(t, root, map[string]string{"f": "x"})
			return src, filepath.Join(root, "f")
		}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			source, out := tc.setup(t, root)
			before := outdirtest.Snapshot(t, root)
			_, err := Run(context.Background(), twoLesionOptions(source, out, 2))
			var ge *GlobalError
			if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want a one-line global error: %s", err, tc.want)
			}
			outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))
		})
	}
}

// TestBuildRewritesOwnOutput reruns into finished builds (of two
// lesions): without the marker (a finished build of an older version, or
// with the marker lost) and through a link, then with other targets,
// whose stale folders are removed, and back.
func TestBuildRewritesOwnOutput(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	src := phantomManifest(t)
	out := filepath.Join(t.TempDir(), "bench")
	outdirtest.CopyTree(t, ref, out)
	if err := os.Remove(filepath.Join(out, filepath.FromSlash(markerRelPath))); err != nil {
		t.Fatal(err)
	}
	// Through a link to the directory, which is followed.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), twoLesionOptions(src, link, 2)); err != nil {
		t.Fatalf("rerun without the marker, through a link: %v", err)
	}
	if readSums(t, out) != readSums(t, ref) {
		t.Fatal("SHA256SUMS changed on a rerun without the marker")
	}
	fewer := twoLesionOptions(src, out, 2)
	fewer.Config.LF = 0
	if _, err := Run(context.Background(), fewer); err != nil {
		t.Fatalf("rerun with other targets: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(out, imagesDir))
	for _, e := range ents {
		if strings.Contains(e.Name(), "_negative_") {
			t.Errorf("stale bundle folder %s kept", e.Name())
		}
	}
	if _, err := Run(context.Background(), twoLesionOptions(src, out, 2)); err != nil {
		t.Fatalf("rerun with the first targets: %v", err)
	}
	if readSums(t, out) != readSums(t, ref) {
		t.Fatal("SHA256SUMS differ after going back to the first targets")
	}
	checkSums(t, out)
}

// TestInspectRefuses: inspect writes only into a build's directory and
// replaces only its own inspect folder.
func TestInspectRefuses(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	root := t.TempDir()
	bench := filepath.Join(root, "bench")
	outdirtest.CopyTree(t, ref, bench)
	key := ""
	ents, _ := os.ReadDir(filepath.Join(bench, imagesDir))
	for _, e := range ents {
		if strings.Contains(e.Name(), "_positive_") {
			key = e.Name()
			break
		}
	}
	tree(t, bench, map[string]string{"inspect/" + key + "/summary.txt": "mine", "inspect/" + key + "/thoughts.md": "mine"})
	other := filepath.Join(root, "other")
	outdirtest.CopyTree(t, filepath.Join(ref, workDirName), filepath.Join(other, workDirName))
	os.Remove(filepath.Join(other, filepath.FromSlash(markerRelPath)))
	info, _ := os.ReadFile(filepath.Join(ref, infoJSON))
	tree(t, other, map[string]string{infoJSON: string(info), "inspect/" + key + "/summary.txt": "mine"})
	before := outdirtest.Snapshot(t, root)
	for dir, want := range map[string]string{bench: "inspect/" + key + "/thoughts.md", other: "is not a benchmark directory written by chexpercept build"} {
		_, err := Inspect(InspectOptions{Dir: dir, Key: key})
		var r *outdir.Refused
		if !errors.As(err, &r) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want a refusal: %s", dir, err, want)
		}
	}
	outdirtest.Unchanged(t, before, outdirtest.Snapshot(t, root))
}

// TestInspectFailedRenameLeavesNoStaging: an inspect whose final rename
// fails removes its staging folder, and the rerun completes with nothing
// of the failed one left in inspect/. The case inspected is a negative:
// its inspect folder is renamed into place like a positive's, without a
// positive's many default-level step images to encode.
func TestInspectFailedRenameLeavesNoStaging(t *testing.T) {
	t.Parallel()
	ref := twoLesionBuild(t)
	bench := filepath.Join(t.TempDir(), "bench")
	outdirtest.CopyTree(t, ref, bench)
	key := ""
	ents, _ := os.ReadDir(filepath.Join(bench, imagesDir))
	for _, e := range ents {
		if strings.Contains(e.Name(), "_negative_") {
			key = e.Name()
			break
		}
	}
	rename, _ := failRenames(1)
	if _, err := Inspect(InspectOptions{Dir: bench, Key: key, testRename: rename}); err == nil {
		t.Fatal("inspect with a failed rename succeeded")
	}
	if _, err := Inspect(InspectOptions{Dir: bench, Key: key}); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	ents, err := os.ReadDir(filepath.Join(bench, inspectDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != key {
			t.Errorf("inspect/ holds %s after the rerun", e.Name())
		}
	}
}
