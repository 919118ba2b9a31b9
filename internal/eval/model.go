package eval

import (
	"github.com/chexpercept/chexpercept/internal/registry"
	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// ResolveModel turns --provider and --model into the run's Model through
// the registry (alias or raw id, spec §13) and the price table (§12).
// notice is non-empty for a raw id (say so to the user).
func ResolveModel(reg *registry.Registry, prices *registry.Prices, prov, model string, noThinking bool) (runmodel.Model, string, error) {
	e, notice, err := reg.Resolve(prov, model)
	if err != nil {
		return runmodel.Model{}, "", err
	}
	s, err := e.SamplingParams(noThinking)
	if err != nil {
		return runmodel.Model{}, "", err
	}
	name := model
	if !e.Raw {
		name = e.Alias // also when model named the entry by its model id
	}
	m := runmodel.Model{Name: name, Provider: e.Provider, Backend: e.Backend, ModelID: e.ModelID, Label: e.Label(),
		Quirks: append([]string{}, e.Quirks...), GLMBoxUnwrap: e.HasQuirk(registry.QuirkGLMBoxUnwrap), Sampling: s}
	if !e.Raw {
		m.Alias = e.Alias
	}
	if prices != nil && e.Backend != runmodel.BackendBaseline {
		if _, p, ok := prices.Lookup(e.ModelID); ok {
			m.Price = &runmodel.Price{Input: p.Input, CachedInput: p.CachedInput, Output: p.Output}
		}
	}
	return m, notice, nil
}
