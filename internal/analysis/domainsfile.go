package analysis

import (
	"errors"
	"fmt"
	"io"
	"regexp"

	"go.yaml.in/yaml/v3"

	"github.com/chexpercept/chexpercept/internal/safefile"
	"github.com/chexpercept/chexpercept/internal/yamlerr"
)

// maxDomainsFileBytes bounds a domains file.
const maxDomainsFileBytes = yamlerr.MaxFileBytes

var groupName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ReadDomains reads a domains file: a YAML mapping from a run name or a
// model (alias or raw id, as the run's manifest names it) to a group
// name (general, medical, proprietary, or any other word; "all" is
// reserved for the pooled group). Errors are one line and name the file
// and the key.
func ReadDomains(path string) (map[string]string, error) {
	data, err := safefile.ReadFile(path, maxDomainsFileBytes, safefile.Follow)
	if err != nil {
		return nil, fmt.Errorf("domains file: %w", err)
	}
	var root yaml.Node
	if err := yamlerr.Decode(data, &root, false); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("domains file %s: empty (want a mapping of run names or models to groups)", path)
		}
		return nil, fmt.Errorf("domains file %s: %v", path, err)
	}
	m := &root
	if m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("domains file %s: line %d: want a mapping of run names or models to groups (name: medical)", path, m.Line)
	}
	out := make(map[string]string, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, fmt.Errorf("domains file %s: line %d: a key must be a run name or a model", path, k.Line)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("domains file %s: line %d: key %q given twice", path, k.Line, k.Value)
		}
		if v.Kind != yaml.ScalarNode || !groupName.MatchString(v.Value) {
			return nil, fmt.Errorf("domains file %s: line %d: key %q: the group must be one word of letters, digits, '.', '_' or '-' (general, medical, proprietary, …)", path, v.Line, k.Value)
		}
		if v.Value == groupAll {
			return nil, fmt.Errorf("domains file %s: line %d: key %q: group %q is reserved for all models pooled", path, v.Line, k.Value, groupAll)
		}
		out[k.Value] = v.Value
	}
	return out, nil
}
