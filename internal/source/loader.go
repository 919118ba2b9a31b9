package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chexpercept/chexpercept/internal/buildcfg"
	"github.com/chexpercept/chexpercept/internal/frame"
	"github.com/chexpercept/chexpercept/internal/job"
	"github.com/chexpercept/chexpercept/internal/mask"
)

// Lungs is a case's resolved lung pair in the canonical frame (§2.4).
type Lungs struct {
	Right, Left         mask.Mask // the resolved pair (intersection when both sources exist)
	ChexRight, ChexLeft mask.Mask // the "chex" role: CheXmask, or the only source
	CxasRight, CxasLeft mask.Mask // the PNG pair when both sources exist (zero Mask otherwise)
	HasSecondary        bool      // both sources present
	Heart               *mask.Mask
}

// Loader loads the masks of cases. It reads every CheXmask CSV the cases
// reference once, at construction; afterwards it is safe for concurrent use.
type Loader struct {
	cfg      buildcfg.Config
	tables   map[string]*ChexTable
	warn     io.Writer
	warnOnce sync.Once
}

// NewLoader prepares a loader for cases. CheXmask CSVs are streamed once,
// keeping only the referenced ids (cached under workDir/chexmask when
// workDir is not ""). A CSV that cannot be opened or parsed is a global
// error. warn receives the one-time size-check warning (may be nil). j,
// the command's job, tracks the temporary files of the cache's writes.
func NewLoader(j *job.Job, cases []*Case, cfg buildcfg.Config, workDir string, warn io.Writer) (*Loader, error) {
	need := map[string]map[string]bool{}
	for _, c := range cases {
		if c.Chexmask == nil {
			continue
		}
		if need[c.Chexmask.CSV] == nil {
			need[c.Chexmask.CSV] = map[string]bool{}
		}
		need[c.Chexmask.CSV][c.Chexmask.ID] = true
	}
	paths := slices.Sorted(maps.Keys(need))
	l := &Loader{cfg: cfg, tables: map[string]*ChexTable{}, warn: warn}
	for _, p := range paths {
		t, err := readChexmaskCached(j, p, need[p], cfg.ChexmaskIDColumn, workDir)
		if err != nil {
			return nil, err
		}
		l.tables[p] = t
	}
	return l, nil
}

// Notes lists facts worth reporting about the inputs (duplicate CheXmask
// ids: the first row won), in a stable order.
func (l *Loader) Notes() []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(l.tables)) {
		if d := l.tables[p].Duplicates; len(d) > 0 {
			out = append(out, fmt.Sprintf("%s: %d duplicate id row(s), first row kept (e.g. %s)", p, len(d), d[0]))
		}
	}
	return out
}

// row returns the CheXmask row of c, failing the case with
// chexmask_row_missing or low_lung_mask_quality.
func (l *Loader) row(c *Case) (*ChexRow, error) {
	t := l.tables[c.Chexmask.CSV]
	var r *ChexRow
	if t != nil {
		r = t.Rows[c.Chexmask.ID]
	}
	if r == nil {
		return nil, frame.Fail("chexmask_row_missing", "id %s not in %s", c.Chexmask.ID, c.Chexmask.CSV)
	}
	if min := l.cfg.ChexmaskMinRCA; min > 0 {
		v, err := strconv.ParseFloat(strings.TrimSpace(r.RCAMean), 64)
		if err != nil {
			return nil, frame.Fail("low_lung_mask_quality", "id %s: Dice RCA (Mean) %q is not a number (chexmask_min_rca %v)", r.ID, r.RCAMean, min)
		}
		if v < min {
			return nil, frame.Fail("low_lung_mask_quality", "id %s: Dice RCA (Mean) %v < chexmask_min_rca %v", r.ID, v, min)
		}
	}
	return r, nil
}

// chexParts decodes parts of c's CheXmask row at the row's size after the
// native-size check, and brings them to the canonical frame.
func (l *Loader) chexParts(c *Case, parts ...string) ([]mask.Mask, error) {
	r, err := l.row(c)
	if err != nil {
		return nil, err
	}
	w, h, err := r.size()
	if err != nil {
		return nil, frame.Fail("mask_unreadable", "CheXmask %s line %d (id %s): %v", c.Chexmask.CSV, r.Line, r.ID, err)
	}
	if c.Chexmask.SizeCheck {
		nw, nh, err := frame.NativeSize(c.Image)
		if err != nil {
			return nil, frame.Fail("image_unreadable", "%v", err)
		}
		if nw != w || nh != h {
			return nil, frame.Fail("chexmask_size_mismatch", "CheXmask row %s is %d×%d (W×H) but image %s is %d×%d", r.ID, w, h, c.Image, nw, nh)
		}
	} else if l.warn != nil {
		l.warnOnce.Do(func() {
			fmt.Fprintln(l.warn, "warning: some CheXmask lung masks were not checked against the native image size (size_check: false); they are resized straight to 1024×1024")
		})
	}
	out := make([]mask.Mask, len(parts))
	for i, p := range parts {
		m, err := r.decodePart(p, w, h)
		if err != nil {
			return nil, frame.Fail("mask_unreadable", "CheXmask %s line %d (id %s), %s: %v", c.Chexmask.CSV, r.Line, r.ID, p, err)
		}
		out[i] = frame.CanonicalMask(m)
	}
	return out, nil
}

// LoadLungs resolves c's lung source (§2.4): a CheXmask row or a PNG pair
// alone is the pair; with both, each side is their intersection, the
// CheXmask pair playing the "chex" role and the PNG pair the "cxas" role.
// The heart mask (inspect only) comes from heart_mask, else the CheXmask
// row; a heart that cannot be loaded is left nil and never fails the case.
func (l *Loader) LoadLungs(c *Case) (*Lungs, error) {
	var chex, png []mask.Mask
	var err error
	if c.Chexmask != nil {
		if chex, err = l.chexParts(c, "right", "left"); err != nil {
			return nil, err
		}
	}
	if c.LungMasks != nil {
		r, err := frame.LoadMask(c.LungMasks.Right)
		if err != nil {
			return nil, err
		}
		lm, err := frame.LoadMask(c.LungMasks.Left)
		if err != nil {
			return nil, err
		}
		png = []mask.Mask{r, lm}
	}
	lu := &Lungs{}
	switch {
	case chex != nil && png != nil:
		lu.ChexRight, lu.ChexLeft = chex[0], chex[1]
		lu.CxasRight, lu.CxasLeft = png[0], png[1]
		lu.Right, lu.Left = mask.And(chex[0], png[0]), mask.And(chex[1], png[1])
		lu.HasSecondary = true
	case chex != nil:
		lu.ChexRight, lu.ChexLeft, lu.Right, lu.Left = chex[0], chex[1], chex[0], chex[1]
	case png != nil:
		lu.ChexRight, lu.ChexLeft, lu.Right, lu.Left = png[0], png[1], png[0], png[1]
	default:
		return nil, frame.Fail("lung_mask_empty", "%s has no lung source (lung_masks or chexmask)", c.KeyID())
	}
	lu.Heart = l.LoadHeart(c)
	return lu, nil
}

// LoadHeart returns the heart mask for the inspect view, or nil.
func (l *Loader) LoadHeart(c *Case) *mask.Mask {
	if c.HeartMask != "" {
		if m, err := frame.LoadMask(c.HeartMask); err == nil {
			return &m
		}
		return nil
	}
	if c.Chexmask != nil {
		if ms, err := l.chexParts(c, "heart"); err == nil {
			return &ms[0]
		}
	}
	return nil
}

// CandidateMask is the union of c's lesion masks, each binarised and
// resized by §1. Failures are mask_unreadable.
func (l *Loader) CandidateMask(c *Case) (mask.Mask, error) {
	if len(c.LesionMasks) == 0 {
		return mask.Mask{}, frame.Fail("mask_unreadable", "%s has no lesion mask", c.KeyID())
	}
	var out mask.Mask
	for i, p := range c.LesionMasks {
		m, err := frame.LoadMask(p)
		if err != nil {
			return mask.Mask{}, err
		}
		if i == 0 {
			out = m
		} else {
			out.OrWith(m)
		}
	}
	return out, nil
}

// LungSourceSHA256 is the digest of c's lung inputs for the case
// fingerprint (§13): the bytes of the lung PNGs and the used CheXmask row
// cells, with the reference and its size_check.
func (l *Loader) LungSourceSHA256(c *Case) (string, error) {
	h := sha256.New()
	if c.LungMasks != nil {
		for _, p := range []string{c.LungMasks.Right, c.LungMasks.Left} {
			d, err := fileSHA256(p, "mask_unreadable", "lung mask")
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "png\x00%s\x00", d)
		}
	}
	if c.Chexmask != nil {
		fmt.Fprintf(h, "chexmask\x00%s\x00%t\x00", c.Chexmask.ID, c.Chexmask.SizeCheck)
		if t := l.tables[c.Chexmask.CSV]; t != nil {
			if r := t.Rows[c.Chexmask.ID]; r != nil {
				for _, s := range []string{r.RCAMean, r.Landmarks, r.Right, r.Left, r.Height, r.Width} {
					fmt.Fprintf(h, "%d\x00%s", len(s), s)
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
