package results_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/eval"
	"github.com/chexpercept/chexpercept/internal/results"
)

// jsonName is the member name of a struct field's json tag.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestManifestInfoMatchesWriter: every ManifestInfo field is a member of
// the runner's eval.Manifest, at the same place and of the same kind, so
// the reader cannot drift from the writer unnoticed.
func TestManifestInfoMatchesWriter(t *testing.T) {
	var walk func(path string, r, w reflect.Type)
	walk = func(path string, r, w reflect.Type) {
		for i := 0; i < r.NumField(); i++ {
			rf := r.Field(i)
			name := jsonName(rf)
			var wf *reflect.StructField
			for j := 0; j < w.NumField(); j++ {
				if f := w.Field(j); jsonName(f) == name {
					wf = &f
				}
			}
			switch {
			case wf == nil:
				t.Errorf("%s%s: not a member of eval.%s", path, name, w.Name())
			case rf.Type.Kind() != wf.Type.Kind():
				t.Errorf("%s%s: %s here, %s in eval.%s", path, name, rf.Type.Kind(), wf.Type.Kind(), w.Name())
			case rf.Name != wf.Name:
				t.Errorf("%s%s: field %s here, %s in eval.%s", path, name, rf.Name, wf.Name, w.Name())
			case rf.Type.Kind() == reflect.Struct:
				walk(path+name+".", rf.Type, wf.Type)
			}
		}
	}
	walk("", reflect.TypeFor[results.ManifestInfo](), reflect.TypeFor[eval.Manifest]())
}

// TestParseManifestInfo reads what the runner writes, ignores other
// members and refuses what is not a manifest.
func TestParseManifestInfo(t *testing.T) {
	em := &eval.Manifest{
		Schema:        eval.ManifestSchema,
		Dataset:       eval.Dataset{Path: "/data/bench", SHA256: "d1", Records: 2100},
		RunName:       "azure_gpt-5.4",
		Model:         eval.ModelInfo{Name: "gpt-5.4", Provider: "azure", Backend: "azure", Quirks: []string{"q"}},
		OracleMode:    "implicit",
		ParseMode:     "strict",
		PromptProfile: eval.ProfileInfo{Name: "default", Texts: []string{"a"}, SHA256: "p1"},
	}
	written, err := em.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := results.ManifestInfo{
		Dataset:       results.ManifestDataset{Path: "/data/bench", SHA256: "d1"},
		RunName:       "azure_gpt-5.4",
		Model:         results.ManifestModel{Name: "gpt-5.4", Provider: "azure"},
		OracleMode:    "implicit",
		ParseMode:     "strict",
		PromptProfile: results.ManifestProfile{Name: "default", SHA256: "p1"},
	}
	for _, c := range []struct {
		name string
		in   string
		want *results.ManifestInfo
		err  string
	}{
		{"written by eval", string(written), &want, ""},
		{"members of a later revision", `{"run_name":"x","model":{"name":"m","new":1},"new":[1]}`,
			&results.ManifestInfo{RunName: "x", Model: results.ManifestModel{Name: "m"}}, ""},
		{"empty object", `{}`, &results.ManifestInfo{}, ""},
		{"not JSON", `{"run_name":`, nil, "unexpected end of JSON input"},
		{"wrong type", `{"dataset":{"path":7}}`, nil, "dataset.path"},
		{"not an object", `[1]`, nil, "cannot unmarshal array"},
	} {
		got, err := results.ParseManifestInfo([]byte(c.in))
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !reflect.DeepEqual(got, c.want):
			t.Errorf("%s: got %+v, want %+v", c.name, *got, *c.want)
		}
	}
}
