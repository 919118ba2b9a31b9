package build

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/mask"
	"github.com/chexpercept/chexpercept/internal/ojson"
	"github.com/chexpercept/chexpercept/internal/qagen"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/source"
	"github.com/chexpercept/chexpercept/internal/version"
)

// Work-state layout (§13): work/<key_id>/case.json, masks/<name>.png,
// tokens/<name>.png.
const (
	workDirName = "work"
	caseJSON    = "case.json"
	workMasks   = "masks"
	workTokens  = "tokens"
)

// fpConfig is the configuration part of the fingerprint: every key except
// buildcfg.NonFingerprintKeys, in the Config's field order.
func fpConfig(cfg buildcfg.Config) (*ojson.Value, error) {
	v, err := ojson.ValueOf(cfg)
	if err != nil {
		return nil, err
	}
	out := ojson.NewObject()
	for _, m := range v.O {
		if !buildcfg.NonFingerprintKeys[m.Key] {
			out.Set(m.Key, m.Value)
		}
	}
	return out, nil
}

// fingerprint is SHA-256 over the tool version, the FP config keys, the
// templates version, the build seed, the key_id and the input digests
// (§13), as compact §6 JSON.
func fingerprint(fpcfg *ojson.Value, seed uint64, c *source.Case, in *inputs) string {
	o := ojson.NewObject().
		Set("tool_version", ojson.Str(version.String())).
		Set("config", fpcfg).
		Set("templates_version", ojson.Str(qagen.TemplatesVersion())).
		Set("seed", ojson.Num(fmt.Sprint(seed))).
		Set("key_id", ojson.Str(c.KeyID())).
		Set("label", ojson.Str(c.Label)).
		Set("image_sha256", ojson.Str(in.imageSHA))
	if c.Positive() {
		o.Set("mask_sha256", ojson.Str(in.maskSHA)).Set("lung_sha256", ojson.Str(in.lungSHA))
		if c.Chexmask != nil {
			o.Set("chexmask", ojson.NewObject().Set("id", ojson.Str(c.Chexmask.ID)).Set("size_check", ojson.Bool(c.Chexmask.SizeCheck)))
		}
		// The lesion masks are digested through their canonical union;
		// the image id and case id reach the record as text.
	}
	if c.ImageID != nil {
		o.Set("image_id", ojson.Str(*c.ImageID))
	}
	o.Set("case_id", ojson.Str(c.CaseID))
	return benchmark.SHA256Hex(ojson.MarshalCompact(o))
}

// suffixBytes is the number of random bytes in randSuffix (hex-encoded).
const suffixBytes = 6

// randSuffix is a short random name part for temporaries and staging
// folders (never part of an output).
func randSuffix() string {
	var b [suffixBytes]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeWork stores an outcome as work/<key_id>/ through a staging folder,
// its masks encoded as the bundle_png_compression value asks (maskEncoder).
func writeWork(workDir string, fp string, o *Outcome, compression string, renameDir renameFunc) error {
	encode := maskEncoder(compression)
	stage := filepath.Join(workDir, ".staging-"+o.KeyID+"-"+randSuffix())
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(stage) // the write's error is the one to report; the next build removes a leftover staging folder (cleanLeftovers)
		}
	}()
	for _, sub := range []struct {
		dir   string
		names []string
	}{{workMasks, o.MaskNames}, {workTokens, o.TokenNames}} {
		if len(sub.names) == 0 {
			continue
		}
		d := filepath.Join(stage, sub.dir)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		for _, n := range sub.names {
			var buf bytes.Buffer
			if err := encode(&buf, o.masks[n]); err != nil {
				return fmt.Errorf("encode %s: %w", n, err)
			}
			if err := os.WriteFile(filepath.Join(d, n+".png"), buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	data := ojson.Marshal(outcomeJSON(fp, o))
	if err := writeSynced(filepath.Join(stage, caseJSON), data); err != nil {
		return err
	}
	final := filepath.Join(workDir, o.KeyID)
	if err := replaceDir(renameDir, stage, final); err != nil {
		return err
	}
	ok = true
	return nil
}

func writeSynced(name string, data []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write failed; its error is the one reported
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // as above
		return err
	}
	return f.Close()
}

func outcomeJSON(fp string, o *Outcome) *ojson.Value {
	v := ojson.NewObject().
		Set("fingerprint", ojson.Str(fp)).
		Set("key_id", ojson.Str(o.KeyID)).
		Set("positive", ojson.Bool(o.Positive)).
		Set("ok", ojson.Bool(o.OK)).
		Set("reason", ojson.Str(o.Reason)).
		Set("detail", ojson.Str(o.Detail)).
		Set("case_seed", ojson.Str(o.CaseSeed)).
		Set("image_sha256", ojson.Str(o.ImageSHA)).
		Set("mask_sha256", ojson.Str(o.MaskSHA)).
		Set("masks", ojson.Strs(nonNil(o.MaskNames))).
		Set("tokens", ojson.Strs(nonNil(o.TokenNames)))
	if o.caseLine != nil {
		v.Set("case", o.caseLine)
	}
	if o.Record != nil {
		v.Set("record", ojson.NewObject().Set(o.KeyID, o.Record.OJSON()))
	} else {
		v.Set("record", ojson.Null())
	}
	if o.Deformation != nil {
		v.Set("deformation", o.Deformation)
	} else {
		v.Set("deformation", ojson.Null())
	}
	return v
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// readWork loads work/<key_id>/case.json. It returns (nil, nil) when there
// is no usable state: missing, unreadable, malformed or with another
// fingerprint (want == "" accepts any fingerprint). lesions is the build's
// lesion set (nil = the built-in seven).
func readWork(workDir, keyID, want string, lesions *benchmark.LesionSet) *Outcome {
	data, err := safefile.ReadFile(filepath.Join(workDir, keyID, caseJSON), maxMetaBytes, safefile.NoFollow)
	if err != nil {
		return nil
	}
	v, err := ojson.Parse(data)
	if err != nil || v.Kind != ojson.KindObject {
		return nil
	}
	str := func(k string) string {
		if x := v.Get(k); x != nil && x.Kind == ojson.KindString {
			return x.S
		}
		return ""
	}
	boolean := func(k string) bool {
		x := v.Get(k)
		return x != nil && x.Kind == ojson.KindBool && x.B
	}
	strs := func(k string) []string {
		x := v.Get(k)
		if x == nil || x.Kind != ojson.KindArray {
			return nil
		}
		var out []string
		for _, e := range x.A {
			if e.Kind == ojson.KindString {
				out = append(out, e.S)
			}
		}
		return out
	}
	if want != "" && str("fingerprint") != want {
		return nil
	}
	if str("key_id") != keyID {
		return nil
	}
	o := &Outcome{KeyID: keyID, Positive: boolean("positive"), OK: boolean("ok"), Reason: str("reason"), Detail: str("detail"),
		CaseSeed: str("case_seed"), ImageSHA: str("image_sha256"), MaskSHA: str("mask_sha256"),
		MaskNames: strs("masks"), TokenNames: strs("tokens")}
	if o.OK {
		rv := v.Get("record")
		if rv == nil || rv.Kind != ojson.KindObject {
			return nil
		}
		recs, err := benchmark.Decode(caseJSON, ojson.Marshal(rv), lesions)
		if err != nil || len(recs) != 1 {
			return nil
		}
		o.Record = recs[0]
		if d := v.Get("deformation"); d != nil && d.Kind == ojson.KindObject {
			o.Deformation = d
		}
		if o.Positive && (o.Deformation == nil || o.Record.Contour == nil) {
			return nil
		}
		for _, n := range o.MaskNames {
			if _, err := os.Stat(filepath.Join(workDir, keyID, workMasks, n+".png")); err != nil {
				return nil
			}
		}
	}
	return o
}

// loadWorkMask decodes a stored mask (a benchmark mask or a lung token).
func loadWorkMask(workDir, keyID, name string) (mask.Mask, error) {
	sub := workMasks
	if strings.HasPrefix(name, "default_") {
		sub = workTokens
	}
	return mask.DecodePNGFile(filepath.Join(workDir, keyID, sub, name+".png"))
}
