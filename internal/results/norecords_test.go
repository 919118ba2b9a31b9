package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// selectAll is an engine whose whole selection is every record.
type selectAll struct{ fakeEngine }

func (selectAll) Select(b *benchmark.Benchmark, _ *ojson.Value) (*WholeSelection, error) {
	w := &WholeSelection{}
	for _, r := range b.Records {
		w.Keys = append(w.Keys, r.KeyID)
	}
	return w, nil
}

// rescore and merge refuse a results.jsonl without one readable record
// (naming the file and the line) instead of writing an empty run.
func TestNoRecordsRefused(t *testing.T) {
	b := sampleBenchmark(t)
	tests := []struct {
		name    string
		results *string // nil: no results.jsonl
		want    string
	}{
		{"torn line only", ptr("not json"), "results.jsonl: line 1: not a complete record"},
		{"torn line after blank lines", ptr("\n\nnot json"), "results.jsonl: line 3: not a complete record"},
		{"bad line", ptr("not json\n"), "results.jsonl: line 1:"},
		{"empty", ptr(""), "results.jsonl: empty"},
		{"missing", nil, "results.jsonl: no such file"},
	}
	write := func(t *testing.T, dir string, content *string) {
		t.Helper()
		if content == nil {
			os.Remove(filepath.Join(dir, ResultsFile))
		} else if err := os.WriteFile(filepath.Join(dir, ResultsFile), []byte(*content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range tests {
		t.Run("rescore/"+tc.name, func(t *testing.T) {
			out := t.TempDir()
			src := filepath.Join(out, "opensource_glm-4v", "oracle_none")
			writeSourceRun(t, src, b, `[]`)
			write(t, src, tc.results)
			eng := &fakeEngine{}
			_, err := RescoreRun(src, RescoreOptions{Mode: "strict", Bench: b, Engine: eng})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if len(eng.final) != 0 {
				t.Errorf("a run was written: %v", eng.final)
			}
			if _, err := os.Stat(filepath.Join(out, "opensource_glm-4v_strict")); !os.IsNotExist(err) {
				t.Errorf("the rescored run directory exists (stat: %v)", err)
			}
		})
		t.Run("merge/"+tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "opensource_glm-4v", "oracle_none")
			for i := 1; i <= 2; i++ {
				d := filepath.Join(run, "shard-"+string(rune('0'+i))+"-of-2")
				writeSourceRun(t, d, b, `[]`)
				m := strings.Replace(string(mustReadFile(t, filepath.Join(d, ManifestFile))),
					`"shard":null`, `"shard":{"i":`+string(rune('0'+i))+`,"n":2}`, 1)
				if err := os.WriteFile(filepath.Join(d, ManifestFile), []byte(m), 0o644); err != nil {
					t.Fatal(err)
				}
				write(t, d, tc.results)
			}
			eng := &selectAll{}
			_, err := Merge([]string{run}, MergeOptions{Out: t.TempDir(), Engine: eng})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if len(eng.final) != 0 {
				t.Errorf("a run was written: %v", eng.final)
			}
		})
	}
}

func ptr(s string) *string { return &s }
