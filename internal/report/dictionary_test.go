package report

import (
	"bufio"
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/chexpercept/chexpercept/internal/ojson"
)

// dictionaryFile is the data dictionary, relative to this package.
const dictionaryFile = "../../docs/data-dictionary.md"

// dictionary is docs/data-dictionary.md parsed: the shared columns, and
// per file section (its heading) the names it lists, in its tables or in
// its "Shared columns:" paragraph.
type dictionary struct {
	shared   map[string]bool
	sections map[string]map[string]bool // heading → names
	files    map[string]string          // file name as the heading writes it → heading
	problems []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

func tickedNames(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// parseDictionary reads the markdown: "## Shared columns" holds one
// table; each "### " heading naming files in backticks opens a section
// whose table rows name columns in their first cell and whose "Shared
// columns:" paragraph names shared ones. A heading with "(run)" is a
// run's file, not mapped to a report file.
func parseDictionary(data []byte) *dictionary {
	d := &dictionary{shared: map[string]bool{}, sections: map[string]map[string]bool{}, files: map[string]string{}}
	var heading string
	inShared, inSharedPara := false, false
	var sharedRefs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			heading, inShared = "", line == "## Shared columns"
			inSharedPara = false
			continue
		case strings.HasPrefix(line, "### "):
			heading, inShared, inSharedPara = strings.TrimPrefix(line, "### "), false, false
			d.sections[heading] = map[string]bool{}
			if !strings.Contains(heading, "(run)") {
				for _, f := range tickedNames(heading) {
					d.files[f] = heading
				}
			}
			continue
		}
		if strings.HasPrefix(line, "Shared columns:") {
			inSharedPara = true
		} else if strings.TrimSpace(line) == "" {
			inSharedPara = false
		}
		if heading != "" && inSharedPara {
			for _, n := range tickedNames(line) {
				d.sections[heading][n] = true
				sharedRefs = append(sharedRefs, heading+": "+n)
			}
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		names := tickedNames(cells[1])
		meaning := ""
		if len(cells) > 3 {
			meaning = strings.TrimSpace(cells[3])
		}
		for _, n := range names {
			switch {
			case inShared:
				if d.shared[n] {
					d.problems = append(d.problems, "shared column "+n+" is listed twice")
				}
				d.shared[n] = true
			case heading != "":
				d.sections[heading][n] = true
				// A concept is described once: a file that lists a shared
				// name points at it, except the reference's own files.
				if d.shared[n] && !strings.HasPrefix(meaning, "→") && !strings.Contains(heading, "all_models_") {
					d.problems = append(d.problems, heading+": "+n+" is a shared column; point at it (→) or list it under Shared columns")
				}
			}
		}
	}
	for _, r := range sharedRefs {
		_, n, _ := strings.Cut(r, ": ")
		if !d.shared[n] {
			d.problems = append(d.problems, r+" is not in the Shared columns table")
		}
	}
	return d
}

// jsonKeys lists the member paths of v: "a", "a.b", "a[].b".
func jsonKeys(v *ojson.Value, prefix string, out map[string]bool) {
	switch {
	case v.O != nil:
		for _, m := range v.O {
			p := m.Key
			if prefix != "" {
				p = prefix + "." + m.Key
			}
			out[p] = true
			jsonKeys(m.Value, p, out)
		}
	case v.A != nil:
		for _, e := range v.A {
			jsonKeys(e, prefix+"[]", out)
		}
	}
}

var modeDir = regexp.MustCompile(`^all_models_oracle_[a-z]+/`)

// reportColumns lists, per data file of a report directory (its name as
// the dictionary writes it), the columns or member paths it has.
func reportColumns(t *testing.T, out string) map[string][]string {
	t.Helper()
	cols := map[string][]string{}
	err := filepath.WalkDir(out, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		rel = modeDir.ReplaceAllString(filepath.ToSlash(rel), "all_models_oracle_<mode>/")
		switch {
		case strings.HasSuffix(rel, ".csv"):
			cols[rel] = readCSVTable(t, p).header
		case rel == "summary.json":
			v, err := ojson.Parse(read(t, p))
			if err != nil {
				t.Fatal(err)
			}
			keys := map[string]bool{}
			jsonKeys(v, "", keys)
			cols[rel] = slices.Sorted(func(yield func(string) bool) {
				for k := range keys {
					if !yield(k) {
						return
					}
				}
			})
		case strings.HasSuffix(rel, ".parquet"):
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			pf, err := parquet.OpenFile(f, st.Size())
			if err != nil {
				t.Fatal(err)
			}
			for _, fl := range pf.Schema().Fields() {
				cols[rel] = append(cols[rel], fl.Name())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// TestDataDictionary fails when a file written by report has a column
// (CSV header, JSON member, Parquet column) that docs/data-dictionary.md
// does not list for it, or when a concept is described twice there.
func TestDataDictionary(t *testing.T) {
	data, err := os.ReadFile(dictionaryFile)
	if err != nil {
		t.Fatal(err)
	}
	d := parseDictionary(data)
	for _, p := range d.problems {
		t.Error(p)
	}
	out := vocabularyReport(t)
	cols := reportColumns(t, out)
	if len(cols) < 18 {
		t.Fatalf("the report has %d data files: %v", len(cols), cols)
	}
	// The readers' files exist only in a report with readers: a second
	// report adds them, and each must be there to be checked.
	readers := reportColumns(t, readersReport(t))
	for _, f := range readersCSVs {
		if _, ok := readers[f]; !ok {
			t.Errorf("the readers report has no %s", f)
		}
	}
	maps.Copy(cols, readers)
	for file, names := range cols {
		heading, ok := d.files[file]
		if !ok {
			t.Errorf("%s: no section in %s", file, dictionaryFile)
			continue
		}
		for _, n := range names {
			if !d.sections[heading][n] {
				t.Errorf("%s: column %q is not in the data dictionary (section %s)", file, n, heading)
			}
		}
	}
}

// TestDataDictionaryParser: the checker itself sees a missing column, a
// concept described twice and a shared name that is not shared.
func TestDataDictionaryParser(t *testing.T) {
	md := "## Shared columns\n\n| Name | Type | Meaning | Null |\n|---|---|---|---|\n| `run` | string | the run | never |\n\n" +
		"## Files\n\n### `x.csv`\n\nShared columns: `run`, `nope`.\n\n| Column | Type | Meaning | Null |\n|---|---|---|---|\n| `a`, `b` | int | counts | never |\n| `run` | string | the run again | never |\n"
	d := parseDictionary([]byte(md))
	if got := d.sections[d.files["x.csv"]]; !got["a"] || !got["b"] || !got["run"] || got["c"] {
		t.Errorf("section names %v", got)
	}
	if len(d.problems) != 2 || !strings.Contains(strings.Join(d.problems, "\n"), "nope") {
		t.Errorf("problems %q, want the duplicate run and the unknown shared name", d.problems)
	}
}
