package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// dictionaryFile is the data dictionary, relative to this package.
const dictionaryFile = "../../docs/data-dictionary.md"

// protocolFile holds the report's core tables in §10.3: rows "| `file` |
// `col,col,…` |".
const protocolFile = "../../docs/reference/protocol.md"

var protocolColumns = regexp.MustCompile("(?m)^\\| `(ext_[a-z_]+\\.csv)` \\| `([^`]+)`")

// dictionary is docs/data-dictionary.md parsed: the shared columns, and
// per file section (its heading) the names it lists, in its tables or in
// its "Shared columns:" paragraph.
type dictionary struct {
	shared   map[string]bool
	sections map[string]map[string]bool // heading → names
	files    map[string]string          // file name as the heading writes it → heading
	problems []string
	// specs holds each listed name's type and null condition: under ""
	// the shared columns, under a heading that section's own table rows.
	specs map[string]map[string]colSpec
}

// colSpec is a dictionary row's type and null condition for one name,
// and its meaning (which "as there" resolves through).
type colSpec struct{ typ, null, meaning string }

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
	d := &dictionary{shared: map[string]bool{}, sections: map[string]map[string]bool{}, files: map[string]string{},
		specs: map[string]map[string]colSpec{"": {}}}
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
			d.specs[heading] = map[string]colSpec{}
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
		meaning, typ, null := "", "", ""
		if len(cells) > 3 {
			meaning = strings.TrimSpace(cells[3])
		}
		if len(cells) > 4 {
			typ, null = strings.TrimSpace(cells[2]), strings.TrimSpace(cells[4])
		}
		types := strings.Split(typ, ", ")
		for i, n := range names {
			spec := colSpec{typ: typ, null: null, meaning: meaning}
			if len(types) == len(names) {
				spec.typ = types[i]
			}
			switch {
			case inShared:
				d.specs[""][n] = spec
			case heading != "":
				d.specs[heading][n] = spec
			}
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

var (
	modeDir   = regexp.MustCompile(`^all_models_oracle_[a-z]+/`)
	scoresCSV = regexp.MustCompile(`^` + scoresDir + `/oracle_[a-z]+/[^/]+/[^/]+\.csv$`)
)

// dictName is a report file's name as the dictionary's heading writes
// it: the folders named by a mode or a reader study generalised.
func dictName(rel string) string {
	rel = modeDir.ReplaceAllString(filepath.ToSlash(rel), "all_models_oracle_<mode>/")
	if scoresCSV.MatchString(rel) {
		return scoresDir + "/oracle_<mode>/<study>/<table>.csv"
	}
	return rel
}

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
		rel = dictName(rel)
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
	t.Parallel()
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
	// Every cell of every CSV file of both reports against the type and
	// the null condition the dictionary documents for its column.
	unchecked := map[string]bool{}
	for _, dir := range []string{out, readersReport(t)} {
		for file, tb := range reportTables(t, dir) {
			if heading, ok := d.files[file]; ok {
				d.checkValues(t, file, heading, tb, unchecked)
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(unchecked)) {
		t.Logf("null condition checked only as \"may be null\": %s", c)
	}
	// protocol.md §10.3 lists the columns of the ext_*.csv files in order.
	proto, err := os.ReadFile(protocolFile)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, m := range protocolColumns.FindAllStringSubmatch(string(proto), -1) {
		listed++
		if got, ok := cols[m[1]]; !ok {
			t.Errorf("%s §10.3 lists %s, which the report does not write", protocolFile, m[1])
		} else if strings.Join(got, ",") != m[2] {
			t.Errorf("%s §10.3: %s has columns %s; the report writes %s", protocolFile, m[1], m[2], strings.Join(got, ","))
		}
	}
	if listed < 7 {
		t.Errorf("%s §10.3 lists %d ext_*.csv files, want the 7 core tables", protocolFile, listed)
	}
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
	t.Parallel()
	md := "## Shared columns\n\n| Name | Type | Meaning | Null |\n|---|---|---|---|\n| `run` | string | the run | never |\n\n" +
		"## Files\n\n### `x.csv`\n\nShared columns: `run`, `nope`.\n\n| Column | Type | Meaning | Null |\n|---|---|---|---|\n| `a`, `b` | int | counts | never |\n| `run` | string | the run again | never |\n"
	d := parseDictionary([]byte(md))
	if got := d.sections[d.files["x.csv"]]; !got["a"] || !got["b"] || !got["run"] || got["c"] {
		t.Errorf("section names %v", got)
	}
	if sp, ok := d.spec(d.files["x.csv"], "b"); !ok || sp.typ != "int" || sp.null != "never" {
		t.Errorf("spec of b: %+v, %v", sp, ok)
	}
	if len(d.problems) != 2 || !strings.Contains(strings.Join(d.problems, "\n"), "nope") {
		t.Errorf("problems %q, want the duplicate run and the unknown shared name", d.problems)
	}
}

// reportTables reads every CSV file of a report directory, by its name as
// the dictionary writes it.
func reportTables(t *testing.T, out string) map[string]*csvTable {
	t.Helper()
	tables := map[string]*csvTable{}
	err := filepath.WalkDir(out, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".csv") {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		tables[dictName(rel)] = readCSVTable(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// nullCell reports whether a CSV cell holds no value: NA in our files,
// an empty cell in the reference's.
func nullCell(s string) bool { return s == NA || s == "" }

// spec is the type and null condition of a column of a file section: its
// own table row, or the shared column's; "as there" follows the file its
// meaning names.
func (d *dictionary) spec(heading, name string) (colSpec, bool) {
	sp, ok := d.specs[heading][name]
	if !ok {
		if !d.sections[heading][name] {
			return colSpec{}, false
		}
		sp, ok = d.specs[""][name]
		return sp, ok
	}
	if sp.null == "as there" {
		for _, f := range tickedNames(sp.meaning) {
			if h, ok := d.files[f]; ok && h != heading {
				return d.spec(h, name)
			}
		}
	}
	return sp, true
}

var (
	nullWhenZero = regexp.MustCompile("^when `([a-z0-9_]+)` is 0$")
	nullWithCol  = regexp.MustCompile("^(?:when `([a-z0-9_]+)` is|with `([a-z0-9_]+)`)$")
	nullUnlessIs = regexp.MustCompile("^unless `([a-z0-9_]+)` is `([a-z0-9_]+)`$")
)

// nullRule is a documented null condition as a check of one row: must
// reports whether the cell has to be null, may whether it can be.
type nullRule func(row []string) (must, may bool)

// estimateColumns are the columns whose interval ci_low and ci_high give,
// in the order a file is looked up.
var estimateColumns = []string{"accuracy", "depth_mean", "difference"}

// nullRuleFor turns a null condition of the dictionary into a rule over
// the rows of tb; false when the condition is prose the test cannot
// evaluate (the column may then be null).
func nullRuleFor(cond string, samples bool, tb *csvTable) (nullRule, bool) {
	has := func(c string) bool { _, ok := tb.col[c]; return ok }
	iff := func(f func(row []string) bool) nullRule {
		return func(row []string) (bool, bool) { b := f(row); return b, b }
	}
	status := func(row []string) string { return tb.get(row, "status") }
	switch {
	case strings.Contains(cond, "samples:"):
		if samples {
			return nil, false // the samples section says when
		}
		return func([]string) (bool, bool) { return false, false }, true
	case strings.HasPrefix(cond, "never"):
		return func([]string) (bool, bool) { return false, false }, true
	}
	if m := nullWhenZero.FindStringSubmatch(cond); m != nil && has(m[1]) {
		return iff(func(row []string) bool { return tb.get(row, m[1]) == "0" }), true
	}
	if m := nullWithCol.FindStringSubmatch(cond); m != nil && has(m[1]+m[2]) {
		return iff(func(row []string) bool { return nullCell(tb.get(row, m[1]+m[2])) }), true
	}
	if m := nullUnlessIs.FindStringSubmatch(cond); m != nil && has(m[1]) {
		return iff(func(row []string) bool { return tb.get(row, m[1]) != m[2] }), true
	}
	switch cond {
	case "unless asked":
		return iff(func(row []string) bool { return status(row) != "asked" }), has("status")
	case "unless skipped":
		return iff(func(row []string) bool { return status(row) != "skipped" }), has("status")
	case "when skipped":
		return iff(func(row []string) bool { return status(row) == "skipped" }), has("status")
	case "unless `error`":
		return iff(func(row []string) bool { return status(row) != "error" }), has("status")
	case "unless multi-select and asked":
		return iff(func(row []string) bool { return tb.get(row, "multi_select") != "true" || status(row) != "asked" }), has("status")
	case "for a single-choice question, and when `accuracy` is":
		return iff(func(row []string) bool {
			i := slices.IndexFunc(benchmark.Questions, func(q benchmark.Question) bool { return q.Name() == tb.get(row, "question") })
			return i < 0 || !benchmark.Questions[i].Multi() || nullCell(tb.get(row, "accuracy"))
		}), has("question")
	case "when no run was asked":
		return iff(func(row []string) bool { return tb.get(row, "n_runs") == "0" }), has("n_runs")
	case "when the estimate is":
		for _, c := range estimateColumns {
			if has(c) {
				return iff(func(row []string) bool { return nullCell(tb.get(row, c)) }), true
			}
		}
	}
	if strings.HasPrefix(cond, "unless asked") {
		// "unless asked and priced", "unless asked, or nothing parsed"…:
		// null when not asked; when asked, it may be either.
		return func(row []string) (bool, bool) {
			notAsked := status(row) != "asked"
			return notAsked, true
		}, has("status")
	}
	return nil, false
}

// typeOK reports whether a non-null cell holds a value of the type.
func typeOK(typ, v string) bool {
	switch typ {
	case "int", "integer":
		_, err := strconv.ParseInt(v, 10, 64)
		return err == nil
	case "float":
		f, err := strconv.ParseFloat(v, 64)
		return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case "bool", "boolean":
		return v == "true" || v == "false"
	}
	return true
}

// checkValues checks every cell of one CSV file: a null cell only where
// the column's null condition allows it (and always where it demands
// it), and every other cell of the documented type. Conditions written
// as prose the test cannot evaluate are collected in unchecked.
func (d *dictionary) checkValues(t *testing.T, file, heading string, tb *csvTable, unchecked map[string]bool) {
	t.Helper()
	samples := strings.HasPrefix(file, "samples.")
	for _, name := range tb.header {
		sp, ok := d.spec(heading, name)
		if !ok {
			continue // reported as a missing column
		}
		rule, ok := nullRuleFor(sp.null, samples, tb)
		if !ok {
			unchecked[file+" "+name+": "+sp.null] = true
		}
		bad := 0
		for i, row := range tb.rows {
			v := tb.get(row, name)
			must, may := true, true
			if rule != nil {
				must, may = rule(row)
			} else {
				must = false
			}
			var problem string
			switch {
			case nullCell(v) && !may:
				problem = fmt.Sprintf("is null (%q), but the dictionary says %q", v, sp.null)
			case !nullCell(v) && must:
				problem = fmt.Sprintf("is %q, but the dictionary says null %q", v, sp.null)
			case !nullCell(v) && !typeOK(sp.typ, v):
				problem = fmt.Sprintf("is %q, not a %s", v, sp.typ)
			}
			if problem != "" {
				if bad++; bad <= 3 {
					t.Errorf("%s row %d: %s %s", file, i+2, name, problem)
				}
			}
		}
	}
}
