package mask

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/imagefile"
)

// DecodeRLE decodes a CheXmask run-length cell (build.md §2.3) into an
// h×w mask: space-separated integer pairs "start length", start 1-based
// over the row-major flattened image; each run sets length pixels from
// index start−1. An empty (or all-blank) cell is an empty mask. Runs that
// leave the image, odd counts and non-integers are errors naming the run.
func DecodeRLE(cell string, h, w int) (Mask, error) {
	if err := imagefile.CheckSize("RLE", w, h, color.GrayModel); err != nil {
		return Mask{}, err
	}
	m := New(w, h)
	f := strings.Fields(cell)
	if len(f)%2 != 0 {
		return Mask{}, fmt.Errorf("RLE has %d numbers, want start/length pairs", len(f))
	}
	n := int64(w) * int64(h)
	for i := 0; i < len(f); i += 2 {
		start, err1 := strconv.ParseInt(f[i], 10, 64)
		length, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil {
			return Mask{}, fmt.Errorf("RLE run %d (%q %q): not integers", i/2+1, f[i], f[i+1])
		}
		if start < 1 || length < 0 || length > math.MaxInt32 || start-1+length > n {
			return Mask{}, fmt.Errorf("RLE run %d (start %d, length %d) leaves the %d-pixel image", i/2+1, start, length, n)
		}
		seg := m.Pix[start-1 : start-1+length]
		for j := range seg {
			seg[j] = 1
		}
	}
	return m, nil
}

// EncodeRLE is the inverse of DecodeRLE: maximal runs of on pixels in
// row-major order as "start length" pairs (1-based), "" for an empty mask.
func EncodeRLE(m Mask) string {
	var sb strings.Builder
	for i := 0; i < len(m.Pix); {
		if m.Pix[i] == 0 {
			i++
			continue
		}
		j := i
		for j < len(m.Pix) && m.Pix[j] != 0 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strconv.Itoa(i + 1))
		sb.WriteByte(' ')
		sb.WriteString(strconv.Itoa(j - i))
		i = j
	}
	return sb.String()
}
