package results

import "encoding/json"

// ManifestInfo is the part of a run's manifest.json (spec protocol.md
// §9.1) that readers of finished runs (analysis, report) use. The
// runner's full type, eval.Manifest, stays in eval: it holds eval's
// selection and provider's sampling types, and the readers must not
// import eval. Field names and JSON members are eval.Manifest's
// (manifest_test.go checks them against the writer).
type ManifestInfo struct {
	Dataset       ManifestDataset `json:"dataset"`
	RunName       string          `json:"run_name"`
	Model         ManifestModel   `json:"model"`
	OracleMode    string          `json:"oracle_mode"`
	ParseMode     string          `json:"parse_mode"`
	PromptProfile ManifestProfile `json:"prompt_profile"`
}

// ManifestDataset is the benchmark a run was made on.
type ManifestDataset struct {
	Path   string `json:"path"` // absolute benchmark directory
	SHA256 string `json:"sha256"`
}

// ManifestModel names the model of a run.
type ManifestModel struct {
	Name     string `json:"name"` // alias, raw id or baseline policy
	Provider string `json:"provider"`
}

// ManifestProfile names the prompt profile of a run.
type ManifestProfile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// ParseManifestInfo decodes the reader fields of manifest.json bytes.
// Other members are ignored, so that readers keep working across
// manifest revisions; a member of the wrong type is an error.
func ParseManifestInfo(data []byte) (*ManifestInfo, error) {
	var m ManifestInfo
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
