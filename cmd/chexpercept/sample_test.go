package main

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSampleCommand(t *testing.T) {
	t.Parallel()
	fx := "../../internal/source/testdata/mimic"
	out := filepath.Join(t.TempDir(), "candidates.jsonl")
	cmd := findCommand(t, "sample")
	stdout, stderr, err := runCommand(t, cmd, "--mimic-cxr", fx, "--mimic-ils", fx+"/mimic_ils_instruction_answer.json",
		"--ils-masks", fx+"/lesion_mask", "--chexmask-csv", fx+"/chexmask_mimic.csv", "--out", out, "--seed", "7")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 14 || !strings.Contains(stdout, "wrote 14 candidates") ||
		!strings.Contains(string(data), `"sample_seed":7}`) {
		t.Errorf("%d lines; stdout:\n%s", n, stdout)
	}
	// Flags persist on the command object: adding --manifest now makes the
	// invocation contradictory, a global problem with exit code 2.
	_, _, err = runCommand(t, cmd, "--manifest", "x.jsonl")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "either --manifest or the MIMIC flags") {
		t.Errorf("got %v", err)
	}
}

// TestSampleMIMICFilesDir: --mimic-cxr accepts the MIMIC-CXR-JPG root and
// its files/ directory, with byte-identical candidates.
func TestSampleMIMICFilesDir(t *testing.T) {
	t.Parallel()
	fx := "../../internal/source/testdata/mimic"
	dir := t.TempDir()
	var outs [2][]byte
	for i, cxr := range []string{fx, fx + "/files"} {
		out := filepath.Join(dir, fmt.Sprintf("c%d.jsonl", i))
		_, stderr, code := runCLI(t, "sample", "--mimic-cxr", cxr, "--mimic-ils", fx+"/mimic_ils_instruction_answer.json",
			"--ils-masks", fx+"/lesion_mask", "--chexmask-csv", fx+"/chexmask_mimic.csv", "--out", out, "--seed", "7")
		if code != 0 {
			t.Fatalf("--mimic-cxr %s: exit %d\n%s", cxr, code, stderr)
		}
		outs[i], _ = os.ReadFile(out)
	}
	if len(outs[0]) == 0 || !bytes.Equal(outs[0], outs[1]) {
		t.Errorf("candidates from files/ differ from those of the root:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// TestSampleRefusesUnusableInputs: a manifest naming a missing image or a
// non-image mask stops sample with exit status 2, one line naming the
// files, and no candidates.jsonl.
func TestSampleRefusesUnusableInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var img bytes.Buffer
	png.Encode(&img, image.NewGray(image.Rect(0, 0, 16, 16)))
	os.WriteFile(filepath.Join(dir, "ok.png"), img.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.png"), []byte("not a png"), 0o644)
	manifest := filepath.Join(dir, "manifest.jsonl")
	os.WriteFile(manifest, []byte(
		`{"case_id": "a_negative_0", "lesion": "edema", "label": "negative", "image": "gone.jpg"}`+"\n"+
			`{"case_id": "b_positive_0", "lesion": "edema", "label": "positive", "image": "ok.png", "lesion_masks": ["notes.png"], "lung_masks": {"right": "ok.png", "left": "ok.png"}}`+"\n"), 0o644)
	out := filepath.Join(dir, "candidates.jsonl")
	_, stderr, code := runCLI(t, "sample", "--manifest", manifest, "--out", out)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, stderr)
	}
	for _, want := range []string{"2 of the 4 input files", filepath.Join(dir, "gone.jpg") + " (case edema_a_negative_0): no such file",
		"lesion mask " + filepath.Join(dir, "notes.png")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("candidates.jsonl written despite the error (%v)", err)
	}
}

// TestSampleOutForeignFile: an existing --out is replaced only when it is
// a candidates file sample wrote (or empty), or with --force; any other
// file is refused with exit 2 and one line naming it, and is left as it was.
func TestSampleOutForeignFile(t *testing.T) {
	t.Parallel()
	fx := "../../internal/source/testdata/mimic"
	args := []string{"sample", "--mimic-cxr", fx, "--mimic-ils", fx + "/mimic_ils_instruction_answer.json",
		"--ils-masks", fx + "/lesion_mask", "--chexmask-csv", fx + "/chexmask_mimic.csv", "--seed", "7"}
	earlier := filepath.Join(t.TempDir(), "earlier.jsonl")
	if _, stderr, code := runCLI(t, append(args, "--out", earlier)...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	own, _ := os.ReadFile(earlier)
	manifestLine := `{"case_id": "a_negative_0", "lesion": "edema", "label": "negative", "image": "a.jpg"}` + "\n"
	for _, tc := range []struct {
		name, content string
		force         bool
		refused       string // "" when the file must be replaced
	}{
		{"notes", "my precious notes\n", false, "first line is not a candidate"},
		{"a manifest", manifestLine, false, "source_type is missing"},
		{"candidates then notes", string(own) + "notes\n", false, "last line is not a candidate"},
		{"notes, --force", "my precious notes\n", true, ""},
		{"its own output", string(own), false, ""},
		{"its own output, other seed", strings.ReplaceAll(string(own), `"sample_seed":7}`, `"sample_seed":3}`), false, ""},
		{"empty", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(out, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			a := append(append([]string(nil), args...), "--out", out)
			if tc.force {
				a = append(a, "--force")
			}
			_, stderr, code := runCLI(t, a...)
			got, _ := os.ReadFile(out)
			if tc.refused != "" {
				if code != 2 || !strings.Contains(stderr, out) || !strings.Contains(stderr, tc.refused) || !strings.Contains(stderr, "--force") {
					t.Errorf("exit %d, want 2 and one line naming %s and %q:\n%s", code, out, tc.refused, stderr)
				}
				if string(got) != tc.content {
					t.Errorf("the refused file changed to %q", got)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !bytes.Equal(got, own) {
				t.Errorf("--out holds %q, want the candidates", got)
			}
		})
	}
}
