package buildcfg

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/ojson"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, yaml, wantErr string
		check               func(Config) bool
	}{
		{"empty file keeps defaults", "", "", func(c Config) bool { return c.RF == 100 && c.MinComponentPx == 1000 }},
		{"override", "rf: 5\nno_deformation_ratio:\n  edema: 0.25\n", "", func(c Config) bool {
			return c.RF == 5 && c.RFRatio("edema") == 0.25 && c.RFRatio("effusion") == 5.0/105
		}},
		{"unknown key", "rff: 5\n", "rff", nil},
		{"wrong type", "rf: many\n", "rf", nil},
		{"bad lesion", "lesions: [edema, flu]\n", "flu", nil},
		{"lesion twice", "lesions: [edema, edema, cardiomegaly]\n", "\"edema\" is listed twice", nil},
		{"bad layout", "mimic_layout: tree\n", "mimic_layout", nil},
		{"zero heart zones", "heart_zones_max: 0\n", "heart_zones_max", nil},
		{"bad axis range", "organic_axis_range: [1.5, 0.5]\n", "organic_axis_range", nil},
		// JSON has no NaN or infinity: the resolved configuration could
		// not be written.
		{"nan", "lung_overlap_min: .nan\n", "lung_overlap_min: NaN is not a finite number", nil},
		{"inf weight", "organic_weights: [1, .inf, 0.25]\n", "organic_weights: +Inf is not a finite number", nil},
		{"nan ratio", "no_deformation_ratio:\n  edema: .nan\n", "no_deformation_ratio.edema: NaN", nil},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
		if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(p)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %v, want one naming %q and the file", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !c.check(cfg) {
			t.Errorf("%s: unexpected config %+v", c.name, cfg)
		}
	}
}

func TestResolvedJSONOmitsWorkers(t *testing.T) {
	b, err := ojson.EncodeCompact(Default())
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "workers") || !strings.Contains(s, `"min_component_px":1000`) || !strings.Contains(s, `"geo_sigma":2.0`) {
		t.Errorf("resolved config JSON: %s", s)
	}
}

// TestLoadErrorsAreOneCleanLine checks the whole message of YAML errors:
// the file, the line and the key, never Go type names.
func TestLoadErrorsAreOneCleanLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, yaml, want string }{
		{"unk", "seeds: 1\n", `line 1: unknown key "seeds"`},
		{"x", "lf: many\n", `line 1: key "lf": want an integer, got "many"`},
		{"ratio", "no_deformation_ratio:\n  edema: half\n", `line 2: key "no_deformation_ratio.edema": want a number, got "half"`},
		{"widths", "point_widths: [3, wide]\n", `line 1: key "point_widths[1]": want an integer, got "wide"`},
		{"seed", "seed: -4\n", `line 1: key "seed": want a non-negative integer, got -4`},
		{"two", "seed: 4\n---\nseed: 5\n", `line 2: a second YAML document starts here ("---"); the file must hold one`},
	} {
		p := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if want := "config " + p + ": " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s: got  %v\nwant %s", tc.name, err, want)
		}
	}
}

// TestBundlePNGCompression: the key takes default, standard or fast; the
// default writes nothing into the resolved configuration (so a default
// build's case fingerprints keep their bytes), and the others enter the
// case fingerprint (fast's work-state masks, copied into the bundle, are
// encoded at that level: a work state of another level is not reused).
func TestBundlePNGCompression(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ value, want, err string }{
		{"default", "", ""},
		{"standard", StandardPNG, ""},
		{"fast", FastPNG, ""},
		{"turbo", "", `bundle_png_compression: "turbo" is not default, standard or fast`},
	} {
		p := filepath.Join(dir, tc.value+".yaml")
		if err := os.WriteFile(p, []byte("bundle_png_compression: "+tc.value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(p)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || cfg.BundlePNGCompression != tc.want {
			t.Errorf("%s: %q, %v", tc.value, cfg.BundlePNGCompression, err)
		}
	}
	def := Default()
	b, err := ojson.EncodeCompact(def)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "bundle_png_compression") || strings.Contains(string(b), "lesion_definitions") {
		t.Errorf("the default configuration writes new keys: %s", b)
	}
	if NonFingerprintKeys["bundle_png_compression"] {
		t.Error("bundle_png_compression is left out of the case fingerprint")
	}
}

// manyDefinitions is a configuration of n new lesion definitions that
// share one anchored body (YAML merge keys), a few bytes each.
func manyDefinitions(n int) string {
	var b strings.Builder
	b.WriteString("lesion_definitions:\n  - &d {name: aaaaa, kind: lung, detection: direct, display: \"" + strings.Repeat("x", 80) + "\"}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - {<<: *d, name: a%d}\n", i)
	}
	return b.String()
}

// TestLesionDefinitionsRefused: definitions that the build would take
// silently in part, or that would give a lesions.json its readers refuse,
// are errors of one line naming the key.
func TestLesionDefinitionsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, yaml, want string }{
		{"duplicate", "lesion_definitions:\n  - {name: nodule, kind: lung, detection: direct}\n  - {name: nodule, kind: heart, detection: direct}\n",
			`lesion_definitions: lesion "nodule": defined twice (definitions 1 and 2)`},
		{"duplicate built-in", "lesion_definitions:\n  - {name: edema, kind: lung, detection: direct}\n  - {name: edema, kind: lung, detection: suggestive}\n",
			`lesion_definitions: lesion "edema": defined twice (definitions 1 and 2)`},
		{"null", "lesion_definitions: [null]\n", `line 1: key "lesion_definitions[0]": an empty list entry (null)`},
		{"null among", "lesion_definitions:\n  - {name: nodule, kind: lung, detection: direct}\n  -\n", `line 3: key "lesion_definitions[1]": an empty list entry (null)`},
		{"empty name", "lesion_definitions:\n  - {name: \"\", kind: lung, detection: direct}\n", `lesion_definitions: definition 1: no name`},
		{"over the lesions.json cap", manyDefinitions(4243), `lesion_definitions: 4250 lesions declare`},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
		if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if len(tc.yaml) > maxConfigBytes {
			t.Fatalf("%s: the configuration is %d bytes, over the file cap", tc.name, len(tc.yaml))
		}
		_, err := Load(p)
		if want := "config " + p + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got  %v\nwant %s", tc.name, err, want)
		}
	}
	// A few hundred definitions stay well within the cap.
	p := filepath.Join(dir, "fine.yaml")
	if err := os.WriteFile(p, []byte(manyDefinitions(300)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err != nil {
		t.Errorf("300 definitions: %v", err)
	}
}
