package provider

import (
	"reflect"
	"slices"
	"testing"

	"github.com/chexpercept/chexpercept/internal/runmodel"
)

// TestRequestHoldsOnlyWhatIsSent: a Request's exported fields are the
// model, the messages (role, text, images) and the sampling parameters,
// all of which a client sends. A field added for anything a model must not
// see (the ground truth, a key id, a file name) fails here: such facts
// reach an in-process client beside the request, never inside it.
func TestRequestHoldsOnlyWhatIsSent(t *testing.T) {
	var got []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[runmodel.Sampling]() {
			return // the sampling parameters are sent as a whole (sampling.go)
		}
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			got = append(got, prefix+f.Name)
			walk(prefix+f.Name+".", f.Type)
		}
	}
	walk("", reflect.TypeFor[Request]())
	want := []string{"Model", "Messages", "Messages.Role", "Messages.Text", "Messages.Images",
		"Messages.Images.SHA256", "Messages.Images.PNG", "Messages.Images.Base64", "Sampling"}
	if !slices.Equal(got, want) {
		t.Errorf("Request's fields %q, want only what is sent, %q", got, want)
	}
}
