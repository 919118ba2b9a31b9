package reading

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// TestPadPNG: a padded PNG has exactly the asked length, decodes to the
// same pixels, and a target without room for the chunk or a file that is
// not a PNG is refused.
func TestPadPNG(t *testing.T) {
	t.Parallel()
	img := image.NewGray(image.Rect(0, 0, 17, 9))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	src := buf.Bytes()
	for _, tc := range []struct {
		name string
		data []byte
		size int
		ok   bool
	}{
		{"no padding bytes", src, len(src) + 12, true},
		{"one padding byte", src, len(src) + 13, true},
		{"many padding bytes", src, len(src) + 5000, true},
		{"no room for the chunk", src, len(src) + 11, false},
		{"not a PNG", []byte("GIF89a and then some more bytes"), 100, false},
		{"truncated", src[:len(src)-1], len(src) + 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := padPNG(tc.data, tc.size)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if len(out) != tc.size {
				t.Errorf("length %d, want %d", len(out), tc.size)
			}
			got, err := png.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("padded PNG does not decode: %v", err)
			}
			g, ok := got.(*image.Gray)
			if !ok || !bytes.Equal(g.Pix, img.Pix) || g.Rect != img.Rect {
				t.Errorf("pixels changed")
			}
		})
	}
}
