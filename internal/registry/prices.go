package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	_ "embed"

	"github.com/chexpercept/chexpercept/internal/runmodel"
	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/yamlerr"
)

//go:embed prices.yaml
var defaultPrices []byte

// Prices is a price table.
type Prices struct {
	Source string // file name, or "prices.yaml (embedded)"
	SHA256 string // hex SHA-256 of the file's bytes, for the manifest
	table  map[string]runmodel.Price
	keys   []string // longest first, then lexicographic: the lookup order
}

type priceYAML struct {
	Input       *float64 `yaml:"input"`
	CachedInput *float64 `yaml:"cached_input"`
	Output      *float64 `yaml:"output"`
}

// LoadPrices reads a price file; "" means the embedded default table. A
// user file replaces the default table entirely (it is the table whose
// hash the manifest records).
func LoadPrices(file string) (*Prices, error) {
	name, data := "prices.yaml (embedded)", defaultPrices
	if file != "" {
		b, err := safefile.ReadFile(file, maxTableBytes, safefile.Follow)
		if err != nil {
			return nil, fmt.Errorf("price table: %w", err)
		}
		name, data = file, b
	}
	return parsePrices(name, data)
}

func parsePrices(name string, data []byte) (*Prices, error) {
	var doc struct {
		Prices map[string]priceYAML `yaml:"prices"`
	}
	if err := yamlerr.Decode(data, &doc, true); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	sum := sha256.Sum256(data)
	p := &Prices{Source: name, SHA256: hex.EncodeToString(sum[:]), table: map[string]runmodel.Price{}}
	for k, v := range doc.Prices {
		key := strings.ToLower(strings.TrimSpace(k))
		if key == "" {
			return nil, fmt.Errorf("%s: prices: empty model key", name)
		}
		if _, dup := p.table[key]; dup {
			return nil, fmt.Errorf("%s: prices.%s: key given twice (keys are compared lower-cased)", name, k)
		}
		var pr runmodel.Price
		for _, f := range []struct {
			field string
			v     *float64
			dst   *float64
		}{{"input", v.Input, &pr.Input}, {"cached_input", v.CachedInput, &pr.CachedInput}, {"output", v.Output, &pr.Output}} {
			if f.v == nil {
				return nil, fmt.Errorf("%s: prices.%s.%s is missing", name, k, f.field)
			}
			if *f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0) {
				return nil, fmt.Errorf("%s: prices.%s.%s must be a non-negative number", name, k, f.field)
			}
			*f.dst = *f.v
		}
		p.table[key] = pr
		p.keys = append(p.keys, key)
	}
	slices.SortFunc(p.keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return p, nil
}

// Lookup prices a model id by the longest key that is a substring of the
// lower-cased id (ties: the lexicographically first key).
func (p *Prices) Lookup(modelID string) (key string, price runmodel.Price, ok bool) {
	id := strings.ToLower(modelID)
	for _, k := range p.keys {
		if strings.Contains(id, k) {
			return k, p.table[k], true
		}
	}
	return "", runmodel.Price{}, false
}

// Cost returns the USD cost of a call, or nil when the model is unpriced
// or the usage unknown (spec: cost_usd null).
func (p *Prices) Cost(modelID string, u *runmodel.Usage) *float64 {
	if u == nil {
		return nil
	}
	_, pr, ok := p.Lookup(modelID)
	if !ok {
		return nil
	}
	c := pr.Cost(*u)
	return &c
}
