package results_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/results"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// testdata/manifest/full.json is a manifest with every member set, as the
// runner wrote it before the manifest type moved here (plus the
// imported_from member import-reference adds). Reading and writing it
// must give the same bytes: rescore and merge rewrite manifests this way,
// so a member the type lost would vanish from their output.
func TestManifestRoundTrip(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "manifest", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("round trip changed the manifest:\n%s", got)
	}
	// The fixture must exercise every field: a field added to the type
	// needs a member here.
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f, fv := v.Type().Field(i), v.Field(i)
			if fv.IsZero() {
				t.Errorf("%s%s is zero in full.json", path, f.Name)
			}
			if fv.Kind() == reflect.Struct {
				walk(path+f.Name+".", fv)
			}
		}
	}
	walk("", reflect.ValueOf(*m))
}

// A manifest written before the kind was recorded reads as it did: its
// kind comes from what the three earlier checks looked at, the provider
// and whether chexpercept's stand-in answered.
func TestManifestKindDerived(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     results.RunKind
	}{
		{"a model", `{"model":{"provider":"openai"}}`, results.KindModel},
		{"a baseline policy", `{"model":{"provider":"baseline","backend":"baseline"}}`, results.KindBaseline},
		{"the in-process baseline", `{"model":{"provider":"baseline"},"server_identity":{"verified":true,"source":"in_process"}}`, results.KindBaseline},
		{"a human reader", `{"model":{"provider":"human"}}`, results.KindHuman},
		{"a model answered by serve-baseline", `{"model":{"provider":"openai"},"server_identity":{"verified":true,"source":"models_list","owned_by":"chexpercept-baseline"}}`, results.KindRehearsal},
		{"a model answered by its server", `{"model":{"provider":"opensource"},"server_identity":{"verified":true,"source":"models_list","owned_by":"vllm"}}`, results.KindModel},
		{"the kind recorded wins", `{"kind":"model","model":{"provider":"baseline"}}`, results.KindModel},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := results.ParseManifest([]byte(c.in))
			if err != nil || m.Kind != c.want {
				t.Errorf("kind %v (%v), want %s", m, err, c.want)
			}
		})
	}
}

// A manifest written before the kind was recorded, rewritten (rescore,
// merge, a resumed run's endpoints), differs from it by the kind line
// alone.
func TestManifestKindAdded(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "manifest", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	const line = "  \"kind\": \"model\",\n"
	old := bytes.Replace(full, []byte(line), nil, 1)
	if bytes.Equal(old, full) {
		t.Fatal("full.json has no kind line")
	}
	m, err := results.ParseManifest(old)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, full) {
		t.Errorf("rewritten, a manifest without its kind is not full.json with the kind line:\n%s", got)
	}
}

// NewManifest records the kind of the spec, or that of its model's
// provider; SetServer makes a model's run that the stand-in answers a
// rehearsal, and nothing else.
func TestNewManifestKind(t *testing.T) {
	bench := &benchmark.Benchmark{}
	standIn := runmodel.Identity{Verified: true, Source: runmodel.IdentityInProcess}
	for _, c := range []struct {
		name    string
		spec    results.RunSpec
		standIn bool
		want    results.RunKind
	}{
		{"model", results.RunSpec{Model: runmodel.Model{Provider: "openai"}}, false, results.KindModel},
		{"rehearsal", results.RunSpec{Model: runmodel.Model{Provider: "openai"}}, true, results.KindRehearsal},
		{"baseline", results.RunSpec{Model: runmodel.Model{Provider: "baseline", Backend: runmodel.BackendBaseline}}, true, results.KindBaseline},
		{"human", results.RunSpec{Model: runmodel.Model{Provider: "human"}}, false, results.KindHuman},
		{"control", results.RunSpec{Model: runmodel.Model{Provider: "openai"}, Kind: results.KindControl}, true, results.KindControl},
		{"image control", results.RunSpec{Model: runmodel.Model{Provider: "openai"}, Control: results.ControlTextOnly}, true, results.KindControl},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := results.NewManifest(c.spec, bench, "/b", nil)
			if c.standIn {
				m.SetServer(standIn)
			}
			if m.Kind != c.want {
				t.Errorf("kind %s, want %s", m.Kind, c.want)
			}
		})
	}
}

// ParseManifest ignores members it does not know and refuses members of
// the wrong type, naming them.
func TestParseManifest(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want *results.Manifest
		err  string
	}{
		{"members of a later revision", `{"run_name":"x","model":{"name":"m","new":1},"new":[1]}`,
			&results.Manifest{RunName: "x", Kind: results.KindModel, Model: results.ModelInfo{Name: "m"}}, ""},
		{"empty object", `{}`, &results.Manifest{Kind: results.KindModel}, ""},
		{"null members", `{"dataset":null,"rescored_from":null}`, &results.Manifest{Kind: results.KindModel}, ""},
		{"not JSON", `{"run_name":`, nil, "unexpected EOF"},
		{"wrong type", `{"dataset":{"path":7}}`, nil, "dataset.path: a number, want a string"},
		{"string for a number", `{"selected_records":"7"}`, nil, "selected_records: a string, want a whole number"},
		{"fraction for a whole number", `{"selected_records":2.5}`, nil, "selected_records: 2.5, want a whole number"},
		// selection.seed is unsigned (eval's sample seed is a
		// uint64): a negative seed is refused.
		{"negative seed", `{"selection":{"seed":-5}}`, nil, "selection.seed: -5, want a whole number, not negative"},
		{"largest seed", `{"selection":{"seed":18446744073709551615}}`, &results.Manifest{Kind: results.KindModel, Selection: results.Selection{Seed: 18446744073709551615}}, ""},
		{"in an array", `{"selection":{"lesions":["edema",3]}}`, nil, "selection.lesions.1: a number, want a string"},
		{"not an object", `[1]`, nil, "top level: an array, want an object"},
		{"duplicate member", `{"run_name":"a","run_name":"b"}`, nil, "duplicate"},
		{"kind given", `{"kind":"control","model":{"provider":"openai"}}`,
			&results.Manifest{Kind: results.KindControl, Model: results.ModelInfo{Provider: "openai"}}, ""},
		{"unknown kind", `{"kind":"robot"}`, nil, `kind: "robot" is not one of model, baseline, human, control, rehearsal`},
		{"kind not a string", `{"kind":1}`, nil, "kind: a number, want a string"},
		{"control given", `{"kind":"control","control":"blank-radiograph"}`,
			&results.Manifest{Kind: results.KindControl, Control: results.ControlBlankRadiograph}, ""},
		{"unknown control", `{"kind":"control","control":"no-text"}`, nil, `control: image control "no-text" is not one of text-only, blank-radiograph`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := results.ParseManifest([]byte(c.in))
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want one containing %q", err, c.err)
				}
			case err != nil:
				t.Error(err)
			case !reflect.DeepEqual(got, c.want):
				t.Errorf("got %+v, want %+v", *got, *c.want)
			}
		})
	}
}

// selection_sha256 hashes the selection's compact JSON: a seed is written
// as the same decimal number whether the field is signed or not (it
// was once signed), so hashes of earlier runs still match.
func TestSelectionHashSeed(t *testing.T) {
	sample := 3
	for _, c := range []struct {
		sel  results.Selection
		json string
	}{
		{results.Selection{Sample: &sample, Seed: 7}, `{"lesions":[],"limit":null,"per_path_limit":null,"sample":3,"seed":7,"shard":null}`},
		{results.Selection{Seed: 18446744073709551615}, `{"lesions":[],"limit":null,"per_path_limit":null,"sample":null,"seed":18446744073709551615,"shard":null}`},
	} {
		sum := sha256.Sum256([]byte(c.json))
		if got, want := c.sel.Hash(), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("Hash(%+v) = %s, want the SHA-256 of %s", c.sel, got, c.json)
		}
	}
}

// A control run is named after the run it controls, and its manifest
// names the control and the kind control.
func TestControlRunName(t *testing.T) {
	m := runmodel.Model{Provider: "openai", Label: "gpt"}
	for _, c := range []struct {
		spec results.RunSpec
		want string
	}{
		{results.RunSpec{Model: m}, "openai_gpt"},
		{results.RunSpec{Model: m, Control: results.ControlTextOnly}, "openai_gpt_text-only"},
		{results.RunSpec{Model: m, NoThinking: true, Control: results.ControlBlankRadiograph}, "openai_gpt_no_thinking_blank-radiograph"},
		{results.RunSpec{Model: m, RunName: "mine", Control: results.ControlTextOnly}, "mine_text-only"},
	} {
		if got := c.spec.Name(); got != c.want {
			t.Errorf("%+v: name %q, want %q", c.spec, got, c.want)
		}
		man := results.NewManifest(c.spec, &benchmark.Benchmark{}, "/b", nil)
		if man.RunName != c.want || man.Control != c.spec.Control || (c.spec.Control != "") != (man.Kind == results.KindControl) {
			t.Errorf("%+v: manifest run_name %q control %q kind %q", c.spec, man.RunName, man.Control, man.Kind)
		}
	}
	for _, s := range []string{"", "text-only", "blank-radiograph"} {
		if c, err := results.ParseControl(s); err != nil || string(c) != s {
			t.Errorf("ParseControl(%q) = %q, %v", s, c, err)
		}
	}
	if _, err := results.ParseControl("Text-Only"); err == nil {
		t.Error("ParseControl accepted a name in other case")
	}
}
