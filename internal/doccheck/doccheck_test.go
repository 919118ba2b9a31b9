package doccheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// maxScanBytes bounds what is read of one file; larger tracked files
// (fixtures, images) are not prose.
const maxScanBytes = 4 << 20

// outsideRE matches a reference to the workspace folder outside the
// repository. The folder name is split so that this file does not match.
var outsideRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])(?:\.\./)*` + "shar" + `ed/`)

// citeRE matches "<page>.md §N" and the sections that follow it in one
// citation: "§5–§7, §10", "§8.1–8.4", "§9.5/§11", "§2 and §3". A comma or
// "and" must be followed by "§" (so "§13, 2 workers" cites §13 only); a
// dash or slash may drop it ("§8.1–8.4").
var citeRE = regexp.MustCompile("([A-Za-z0-9_-]+\\.md)`?\\)?\\s{0,3}(§[0-9]+(?:\\.[0-9]+)*" +
	`(?:(?:\s*[–-]\s*§?|\s*/\s*§?|\s*,\s*§|\s+and\s+§)[0-9]+(?:\.[0-9]+)*)*)`)

// sectionNumRE pulls the section numbers out of a citation's § part.
var sectionNumRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)*`)

// headingNumRE reads a numbered heading: "## 2. Inputs", "### 2.4 Generic…".
var headingNumRE = regexp.MustCompile(`^#{1,6}\s+([0-9]+(?:\.[0-9]+)*)\.?(?:\s|$)`)

// mdLinkRE matches an inline Markdown link target.
var mdLinkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// repo is the repository as the checks see it: its tracked files and the
// Markdown pages under docs/ with their section numbers and anchors.
type repo struct {
	root     string
	files    []string            // tracked, slash-separated, relative to root
	tracked  map[string]bool     // files and every folder holding one
	sections map[string][]string // page base name → section numbers of its headings
	anchors  map[string][]string // page path → anchors of its headings
}

func loadRepo(t *testing.T) *repo {
	t.Helper()
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := trackedFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{root: root, files: files, tracked: map[string]bool{},
		sections: map[string][]string{}, anchors: map[string][]string{}}
	for _, f := range files {
		r.tracked[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.tracked[d] = true
		}
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		data, err := readBounded(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		nums, anchors := headings(string(data))
		r.anchors[f] = anchors
		if strings.HasPrefix(f, "docs/") {
			base := path.Base(f)
			r.sections[base] = append(r.sections[base], nums...)
		}
	}
	return r
}

// findRoot walks up from the test's directory to the folder holding go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test directory")
		}
		dir = parent
	}
}

// trackedFiles lists the files git tracks, or, outside a git checkout (a
// source archive), every regular file below root except dot-folders.
func trackedFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxScanBytes))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

// headings returns the section numbers and the GitHub anchors of the
// Markdown headings of page, outside fenced code blocks.
func headings(page string) (nums, anchors []string) {
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		if m := headingNumRE.FindStringSubmatch(line); m != nil {
			nums = append(nums, m[1])
		}
		a := slug(strings.TrimLeft(line, "#"))
		if n := seen[a]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", a, n))
		} else {
			anchors = append(anchors, a)
		}
		seen[a]++
	}
	return nums, anchors
}

// slug is GitHub's heading anchor: lower case, letters, digits, "-" and
// "_" kept, spaces turned into "-", everything else dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// textFile reports whether data looks like text (no NUL byte early on).
func textFile(data []byte) bool {
	return !bytes.Contains(data[:min(len(data), 8000)], []byte{0})
}

// lineOf is the 1-based line of byte offset off in data.
func lineOf(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// problems runs every check over the repository's tracked files.
func (r *repo) problems() ([]string, error) {
	var out []string
	for _, f := range r.files {
		data, err := readBounded(filepath.Join(r.root, filepath.FromSlash(f)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted in the work tree, not yet in the index
			}
			return nil, err
		}
		if !textFile(data) {
			continue
		}
		out = append(out, r.fileProblems(f, data)...)
	}
	return out, nil
}

func (r *repo) fileProblems(f string, data []byte) []string {
	var out []string
	text := string(data)
	for _, loc := range outsideRE.FindAllStringIndex(text, -1) {
		out = append(out, fmt.Sprintf("%s:%d: refers to a folder outside the repository (%q)",
			f, lineOf(data, loc[0]), strings.TrimSpace(text[loc[0]:loc[1]])))
	}
	for _, loc := range citeRE.FindAllStringSubmatchIndex(text, -1) {
		page, cite := text[loc[2]:loc[3]], text[loc[4]:loc[5]]
		nums, ok := r.sections[page]
		if !ok {
			out = append(out, fmt.Sprintf("%s:%d: cites %s %s, but docs/ has no %s", f, lineOf(data, loc[0]), page, cite, page))
			continue
		}
		for _, n := range sectionNumRE.FindAllString(cite, -1) {
			if !slices.Contains(nums, n) {
				out = append(out, fmt.Sprintf("%s:%d: cites %s §%s, which has no such section", f, lineOf(data, loc[0]), page, n))
			}
		}
	}
	if strings.HasSuffix(f, ".md") {
		out = append(out, r.linkProblems(f, data)...)
	}
	return out
}

// linkProblems checks the relative links of Markdown page f (outside
// fenced code blocks): the target must be tracked, and an anchor into a
// Markdown page must be one of its headings'.
func (r *repo) linkProblems(f string, data []byte) []string {
	var out []string
	inFence := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := f
			if file != "" {
				dest = path.Clean(path.Join(path.Dir(f), file))
				if !r.tracked[dest] {
					out = append(out, fmt.Sprintf("%s:%d: links to %s, which the repository does not have", f, i+1, target))
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !slices.Contains(r.anchors[dest], anchor) {
				out = append(out, fmt.Sprintf("%s:%d: links to %s, but %s has no heading with that anchor", f, i+1, target, dest))
			}
		}
	}
	return out
}

// TestRepositoryDocs is the check itself, over every tracked file.
func TestRepositoryDocs(t *testing.T) {
	r := loadRepo(t)
	for _, page := range []string{"format.md", "build.md", "protocol.md"} {
		if len(r.sections[page]) == 0 {
			t.Errorf("docs/ has no numbered %s", page)
		}
	}
	probs, err := r.problems()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// TestChecksCatch runs the checks on made-up files, so a check that
// silently matched nothing would fail here.
func TestChecksCatch(t *testing.T) {
	r := &repo{
		tracked:  map[string]bool{"docs/guide.md": true, "docs/reference/build.md": true, "docs": true, "docs/reference": true},
		sections: map[string][]string{"build.md": {"2", "2.4", "2.5", "13"}},
		anchors: map[string][]string{
			"docs/guide.md":           {"usage"},
			"docs/reference/build.md": {"24-generic-jsonl-manifest"},
		},
	}
	tests := []struct {
		name, file, text string
		want             int // problems expected
	}{
		{"workspace folder", "a.go", "// see " + "shar" + "ed/spec/build.md", 1},
		{"relative workspace folder", "README.md", "in ../" + "shar" + "ed/spec", 1},
		{"a word ending in shared is fine", "a.go", "// overshared/", 0},
		{"existing section", "a.go", "// build.md §2.4 and build.md §13", 0},
		{"missing section", "a.go", `f.String("config", "", "YAML (build` + `.md §2.6)")`, 1},
		{"range, second end missing", "a.go", "// build" + ".md §2.4–2.9", 1},
		{"list, later entry missing", "a.go", "// build.md §2, §7", 1},
		{"slash", "a.go", "// build.md §2.5/§14", 1},
		{"comma then a plain number is not a section", "a.go", "// build.md §13, 2 workers", 0},
		{"backticked page", "docs/guide.md", "`build.md` §9", 1},
		{"unknown page", "a.go", "// spec nope" + ".md §1", 1},
		{"link to a missing file", "docs/guide.md", "[x](reference/format.md)", 1},
		{"link to a file", "docs/guide.md", "[x](reference/build.md)", 0},
		{"link with a good anchor", "docs/guide.md", "[x](reference/build.md#24-generic-jsonl-manifest)", 0},
		{"link with a bad anchor", "docs/guide.md", "[x](reference/build.md#2-4)", 1},
		{"anchor within the page", "docs/guide.md", "[x](#usage) [y](#nope)", 1},
		{"web links are not checked", "docs/guide.md", "[x](https://example.org/a.md)", 0},
		{"links in code blocks are not checked", "docs/guide.md", "```\n[x](nope.md)\n```", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.fileProblems(tc.file, []byte(tc.text))
			if len(got) != tc.want {
				t.Errorf("%d problems, want %d: %q", len(got), tc.want, got)
			}
		})
	}
}

func TestHeadings(t *testing.T) {
	page := "# Title\n\n## 2. Inputs\n\n### 2.4 Generic JSONL manifest\n\n```\n## 9. not a heading\n```\n### 3.6 Question text\n## Usage\n## Usage\n"
	nums, anchors := headings(page)
	if want := []string{"2", "2.4", "3.6"}; !slices.Equal(nums, want) {
		t.Errorf("numbers %q, want %q", nums, want)
	}
	want := []string{"title", "2-inputs", "24-generic-jsonl-manifest", "36-question-text", "usage", "usage-1"}
	if !slices.Equal(anchors, want) {
		t.Errorf("anchors %q, want %q", anchors, want)
	}
	if got := slug(" 3. `chexpercept.json` schema"); got != "3-chexperceptjson-schema" {
		t.Errorf("slug = %q", got)
	}
}
