package render

import (
	"fmt"
	"strings"

	"github.com/chexpercept/chexpercept/internal/mask"
)

// Default token names (format.md §3.3, build.md §9.5/§11).
const (
	TokenKeep    = "default_keep"
	TokenDilated = "default_dilated"
	TokenEroded  = "default_eroded"
)

// TokenPrefix starts every default token name.
const TokenPrefix = "default_"

// IsToken reports whether name is a default_* token.
func IsToken(name string) bool { return strings.HasPrefix(name, TokenPrefix) }

// LungToken is default_<side>_lung_<role> (side right|left, role chex|cxas).
func LungToken(side, role string) string { return "default_" + side + "_lung_" + role }

// Lungs are the un-augmented lung masks the lung tokens stand for:
// ChexRight/ChexLeft the CheXmask (or only-source) lungs, CxasRight/CxasLeft
// the PNG lungs, present only when HasSecondary (both sources exist).
type Lungs struct {
	ChexRight, ChexLeft, CxasRight, CxasLeft mask.Mask
	HasSecondary                             bool
}

// Tokens resolves mask names and default tokens to masks (§11 token
// rendering) and renders unions. Derived token masks are computed once and
// cached, so a Tokens value belongs to one case and is not safe for
// concurrent use.
type Tokens struct {
	// Masks are the named masks of the sequential attempt.
	Masks map[string]mask.Mask
	// Before are revision_before_masks; their union is default_keep.
	Before []string
	// Lungs are the lung masks behind the default_<side>_lung_* tokens.
	Lungs
	// MorphSize and MorphIterations shape default_dilated/default_eroded
	// (default_morph_size, default_morph_iterations).
	MorphSize, MorphIterations int

	keep, dilated, eroded *mask.Mask
}

// Mask returns the mask a name stands for.
func (t *Tokens) Mask(name string) (mask.Mask, error) {
	switch name {
	case TokenKeep:
		return t.keepMask()
	case TokenDilated, TokenEroded:
		if name == TokenDilated && t.dilated != nil {
			return *t.dilated, nil
		}
		if name == TokenEroded && t.eroded != nil {
			return *t.eroded, nil
		}
		k, err := t.keepMask()
		if err != nil {
			return mask.Mask{}, err
		}
		if t.MorphSize <= 0 || t.MorphIterations < 0 {
			return mask.Mask{}, fmt.Errorf("render: bad default morphology %d×%d, %d iterations", t.MorphSize, t.MorphSize, t.MorphIterations)
		}
		se := mask.Square(t.MorphSize)
		if name == TokenDilated {
			m := mask.Dilate(k, se, t.MorphIterations)
			t.dilated = &m
			return m, nil
		}
		m := mask.Erode(k, se, t.MorphIterations)
		t.eroded = &m
		return m, nil
	case LungToken("right", "chex"):
		return t.lung(name, t.ChexRight, true)
	case LungToken("left", "chex"):
		return t.lung(name, t.ChexLeft, true)
	case LungToken("right", "cxas"):
		return t.lung(name, t.CxasRight, t.HasSecondary)
	case LungToken("left", "cxas"):
		return t.lung(name, t.CxasLeft, t.HasSecondary)
	}
	if IsToken(name) {
		return mask.Mask{}, fmt.Errorf("render: unknown default token %q", name)
	}
	m, ok := t.Masks[name]
	if !ok {
		return mask.Mask{}, fmt.Errorf("render: no mask named %q", name)
	}
	return m, nil
}

func (t *Tokens) lung(name string, m mask.Mask, ok bool) (mask.Mask, error) {
	if !ok || len(m.Pix) == 0 {
		return mask.Mask{}, fmt.Errorf("render: token %s needs a lung mask the case does not have", name)
	}
	return m, nil
}

func (t *Tokens) keepMask() (mask.Mask, error) {
	if t.keep != nil {
		return *t.keep, nil
	}
	if len(t.Before) == 0 {
		return mask.Mask{}, fmt.Errorf("render: %s needs revision_before_masks", TokenKeep)
	}
	var u mask.Mask
	for i, n := range t.Before {
		if IsToken(n) {
			return mask.Mask{}, fmt.Errorf("render: revision_before_masks holds token %q", n)
		}
		m, ok := t.Masks[n]
		if !ok {
			return mask.Mask{}, fmt.Errorf("render: no mask named %q", n)
		}
		if i == 0 {
			u = m.Clone()
		} else if err := orInto(u, m, n); err != nil {
			return mask.Mask{}, err
		}
	}
	t.keep = &u
	return u, nil
}

// Union renders the union of the named masks (an option image's mask).
func (t *Tokens) Union(names []string) (mask.Mask, error) {
	return t.UnionInto(mask.Mask{}, names)
}

// UnionInto is Union reusing dst's storage when it has the right size.
func (t *Tokens) UnionInto(dst mask.Mask, names []string) (mask.Mask, error) {
	if len(names) == 0 {
		return mask.Mask{}, fmt.Errorf("render: empty mask list")
	}
	for i, n := range names {
		m, err := t.Mask(n)
		if err != nil {
			return mask.Mask{}, err
		}
		if i == 0 {
			if dst.W != m.W || dst.H != m.H || len(dst.Pix) != len(m.Pix) {
				dst = mask.New(m.W, m.H)
			}
			copy(dst.Pix, m.Pix)
			continue
		}
		if err := orInto(dst, m, n); err != nil {
			return mask.Mask{}, err
		}
	}
	return dst, nil
}

func orInto(dst, m mask.Mask, name string) error {
	if m.W != dst.W || m.H != dst.H || len(m.Pix) != len(dst.Pix) {
		return fmt.Errorf("render: mask %q is %dx%d, expected %dx%d", name, m.W, m.H, dst.W, dst.H)
	}
	for i, v := range m.Pix {
		dst.Pix[i] |= v
	}
	return nil
}
