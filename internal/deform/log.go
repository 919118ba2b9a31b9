package deform

import (
	"github.com/chexpercept/chexpercept/internal/ojson"
)

// Log is the structured trace of one Run, written by the build as the
// inspect view's deformation.json (build.md §12). It never influences a
// result.
type Log struct {
	GradientP  float64        `json:"gradient_percentile_value"`
	Catalogue  []CatalogueLog `json:"catalogue"`
	Sequential []RetryLog     `json:"sequential"`
	Failure    string         `json:"failure,omitempty"`
}

// JSON converts the log with the struct codec.
func (l *Log) JSON() (*ojson.Value, error) { return ojson.ValueOf(l) }

// CatalogueLog holds every catalogue attempt of one component.
type CatalogueLog struct {
	Component int             `json:"component"`
	Attempts  []catAttemptLog `json:"attempts"`
}

type catAttemptLog struct {
	Attempt    int          `json:"attempt"`
	Selection  selectionLog `json:"selection"`
	Anatomies  []anatomyLog `json:"anatomies"`
	Deform     *deformLog   `json:"deform,omitempty"`
	Validation *validation  `json:"validation,omitempty"`
	Result     string       `json:"result"`
}

type anatomyLog struct {
	Name      string         `json:"name"`
	Operation string         `json:"operation"`
	Depth     int            `json:"depth"`
	Tries     []pointsTryLog `json:"tries"`
	Kept      bool           `json:"kept"`
	Center    *[2]int        `json:"center,omitempty"`
}

// RetryLog is one sequential retry.
type RetryLog struct {
	Retry      int            `json:"retry"`
	K          int            `json:"k"`
	Selected   []string       `json:"selected"`
	Components []compRetryLog `json:"components"`
	Markers    *markerLog     `json:"marker_check,omitempty"`
	Finalize   string         `json:"finalize,omitempty"`
	Result     string         `json:"result"`
}

type compRetryLog struct {
	Component  int       `json:"component"`
	Shuffled   []string  `json:"shuffled_anatomies"`
	TargetsExp []string  `json:"targets_expansion"`
	TargetsCon []string  `json:"targets_contraction"`
	Steps      []stepLog `json:"steps"`
}

type stepLog struct {
	Name       string        `json:"name"`
	Anatomy    string        `json:"anatomy"`
	Operation  string        `json:"operation"`
	Points     [][2]int      `json:"points"`
	Center     [2]int        `json:"center"`
	Deform     deformLog     `json:"deform"`
	Validation *validation   `json:"validation,omitempty"`
	FakeCalls  []fakeCallLog `json:"fake_calls,omitempty"`
}

type markerLog struct {
	Centers  [][2]int `json:"centers"`
	TooClose [][2]int `json:"too_close_pairs,omitempty"` // indices into Centers
	OK       bool     `json:"ok"`
}

type fakeCallLog struct {
	Op         string           `json:"op"`
	PointDraws []fakeDrawLog    `json:"point_draws"`
	Fallback   *fakeFallbackLog `json:"fallback,omitempty"`
	FakePoints [][2]int         `json:"fake_points"`
	MaskTries  []fakeMaskTryLog `json:"mask_tries"`
	Fakes      []string         `json:"fakes"`
}

type fakeDrawLog struct {
	Depth      int      `json:"depth"`
	Iterations int      `json:"iterations"`
	Candidates int      `json:"candidates"`
	Picks      [][2]int `json:"picks"`
}

type fakeFallbackLog struct {
	Candidates int      `json:"candidates"`
	Picks      [][2]int `json:"picks"`
}

type fakeMaskTryLog struct {
	Depth      int            `json:"depth"`
	Retry      int            `json:"retry"`
	FA         int            `json:"fa"`
	Tries      []pointsTryLog `json:"point_tries"`
	Deform     *deformLog     `json:"deform,omitempty"`
	Validation *validation    `json:"validation,omitempty"`
	Result     string         `json:"result"`
}
