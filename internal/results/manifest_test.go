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

	"github.com/chexpercept/chexpercept/internal/results"
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
			&results.Manifest{RunName: "x", Model: results.ModelInfo{Name: "m"}}, ""},
		{"empty object", `{}`, &results.Manifest{}, ""},
		{"null members", `{"dataset":null,"rescored_from":null}`, &results.Manifest{}, ""},
		{"not JSON", `{"run_name":`, nil, "unexpected EOF"},
		{"wrong type", `{"dataset":{"path":7}}`, nil, "dataset.path: a number, want a string"},
		{"string for a number", `{"selected_records":"7"}`, nil, "selected_records: a string, want a whole number"},
		{"fraction for a whole number", `{"selected_records":2.5}`, nil, "selected_records: 2.5, want a whole number"},
		// selection.seed is unsigned (eval's sample seed is a
		// uint64): a negative seed is refused.
		{"negative seed", `{"selection":{"seed":-5}}`, nil, "selection.seed: -5, want a whole number, not negative"},
		{"largest seed", `{"selection":{"seed":18446744073709551615}}`, &results.Manifest{Selection: results.Selection{Seed: 18446744073709551615}}, ""},
		{"in an array", `{"selection":{"lesions":["edema",3]}}`, nil, "selection.lesions.1: a number, want a string"},
		{"not an object", `[1]`, nil, "top level: an array, want an object"},
		{"duplicate member", `{"run_name":"a","run_name":"b"}`, nil, "duplicate"},
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
