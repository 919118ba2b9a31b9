package runmodel

import (
	"strings"
	"testing"
)

// An unverified identity is the sorted, deduplicated endpoint list.
func TestUnverified(t *testing.T) {
	a := Unverified([]string{"http://b/v1", "http://a/v1", "http://b/v1"})
	b := Unverified([]string{"http://a/v1", "http://b/v1"})
	if !a.Same(b) || a.Verified || strings.Join(a.Endpoints, ",") != "http://a/v1,http://b/v1" {
		t.Errorf("%+v vs %+v", a, b)
	}
	if c := Unverified([]string{"http://a/v1"}); c.Same(a) {
		t.Error("another endpoint list has the same identity")
	}
}
