package report

import (
	"image"
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestGroupedBarsZeroAndLegend draws a bar chart whose first series is
// 0 % in every group: its colour still shows as a bar above the axis in
// each group, and no series colour touches the image's right edge (the
// legend stays inside).
func TestGroupedBarsZeroAndLegend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		groups []string
		series []barSeries
	}{
		{"two series", []string{"a_long_model_name", "b"}, []barSeries{
			{name: "stage 1", val: []float64{0, 0}, lo: []float64{0, 0}, hi: []float64{0.3, 0.3}},
			{name: "a rather long series name", val: []float64{0.5, 1}, lo: []float64{0.4, 0.9}, hi: []float64{0.6, 1}},
		}},
		{"one series", []string{"x", "y", "z"}, []barSeries{
			{name: "revision_result", val: []float64{0, 0, 0}, lo: []float64{math.NaN(), 0, 0}, hi: []float64{math.NaN(), 0.2, 0.2}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := groupedBars("title", "accuracy", tc.groups, tc.series)
			if err != nil {
				t.Fatal(err)
			}
			c := vgimg.NewWith(vgimg.UseWH(12*vg.Centimeter, 8*vg.Centimeter), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
			p.Draw(draw.New(c))
			img := c.Image()
			b := img.Bounds()
			zero := seriesColors[0]
			// Columns holding the zero series' colour, each a bar.
			cols := 0
			for x := b.Min.X; x < b.Max.X; x++ {
				if hasColour(img, x, b.Max.Y/2, b.Max.Y, zero) {
					cols++
				}
			}
			if cols < 2*len(tc.groups) {
				t.Errorf("the 0 %% bars show in %d pixel columns, want at least %d", cols, 2*len(tc.groups))
			}
			for x := b.Max.X - 2; x < b.Max.X; x++ {
				for _, col := range seriesColors[:len(tc.series)] {
					if hasColour(img, x, b.Min.Y, b.Max.Y, col) {
						t.Errorf("series colour %v at the right edge (x = %d): the legend runs off the image", col, x)
					}
				}
			}
		})
	}
}

// hasColour reports whether column x of img has colour c between rows y0
// and y1.
func hasColour(img image.Image, x, y0, y1 int, c color.Color) bool {
	cr, cg, cb, _ := c.RGBA()
	for y := y0; y < y1; y++ {
		r, g, b, _ := img.At(x, y).RGBA()
		if r>>8 == cr>>8 && g>>8 == cg>>8 && b>>8 == cb>>8 {
			return true
		}
	}
	return false
}
