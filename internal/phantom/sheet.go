package phantom

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

const (
	thumb    = size / 4 // thumbnail side
	caption  = 16       // caption strip under a thumbnail
	headerH  = 36
	minSheet = 600
)

var (
	colRight  = color.RGBA{0, 190, 255, 255}
	colLeft   = color.RGBA{40, 230, 40, 255}
	colHeart  = color.RGBA{255, 60, 60, 255}
	colLesion = color.RGBA{255, 215, 0, 255}
	colText   = color.RGBA{230, 230, 230, 255}
)

// onSheet reports whether case i is among the first per cases of its
// lesion and label (plan order keeps each such group contiguous).
func onSheet(specs []caseSpec, i, per int) bool {
	n := 0
	for j := i - 1; j >= 0 && specs[j].lesion == specs[i].lesion && specs[j].positive == specs[i].positive; j-- {
		n++
	}
	return n < per
}

// thumbnail shrinks the radiograph 4× by box averaging and draws the mask
// outlines on it, with a caption strip below.
func thumbnail(cd *caseData, cs caseSpec) *image.RGBA {
	t := image.NewRGBA(image.Rect(0, 0, thumb, thumb+caption))
	draw.Draw(t, image.Rect(0, thumb, thumb, thumb+caption), image.NewUniform(color.RGBA{20, 20, 20, 255}), image.Point{}, draw.Src)
	for ty := 0; ty < thumb; ty++ {
		for tx := 0; tx < thumb; tx++ {
			s := 0
			for dy := 0; dy < 4; dy++ {
				row := cd.img[(ty*4+dy)*size+tx*4:]
				s += int(row[0]) + int(row[1]) + int(row[2]) + int(row[3])
			}
			g := uint8((s + 8) / 16)
			t.SetRGBA(tx, ty, color.RGBA{g, g, g, 255})
		}
	}
	outline(t, cd.right, colRight)
	outline(t, cd.left, colLeft)
	outline(t, cd.heart, colHeart)
	if cd.lesion != nil {
		outline(t, cd.lesion, colLesion)
	}
	sign := "-"
	if cs.positive {
		sign = "+"
	}
	label(t, 3, thumb+12, fmt.Sprintf("%s %s %s", cs.imageID, cs.lesion, sign), colText)
	return t
}

// outline marks the boundary of the 4×-reduced mask (a reduced pixel is on
// when at least half its 16 source pixels are).
func outline(t *image.RGBA, m []uint8, c color.RGBA) {
	var small [thumb * thumb]bool
	for ty := 0; ty < thumb; ty++ {
		for tx := 0; tx < thumb; tx++ {
			s := 0
			for dy := 0; dy < 4; dy++ {
				row := m[(ty*4+dy)*size+tx*4:]
				s += int(row[0]) + int(row[1]) + int(row[2]) + int(row[3])
			}
			small[ty*thumb+tx] = s >= 8
		}
	}
	on := func(x, y int) bool {
		return x >= 0 && y >= 0 && x < thumb && y < thumb && small[y*thumb+x]
	}
	for y := 0; y < thumb; y++ {
		for x := 0; x < thumb; x++ {
			if on(x, y) && (!on(x-1, y) || !on(x+1, y) || !on(x, y-1) || !on(x, y+1)) {
				t.SetRGBA(x, y, c)
			}
		}
	}
}

func label(dst draw.Image, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: dst, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// contactSheet lays out one row per lesion: its first per positives, then
// its first per negatives.
func contactSheet(specs []caseSpec, thumbs []*image.RGBA, per, n, neg int, seed uint64) *image.RGBA {
	cols := 2 * per
	w := max(cols*thumb, minSheet)
	rows := 0
	for i, cs := range specs {
		if i == 0 || cs.lesion != specs[i-1].lesion {
			rows++
		}
	}
	h := headerH + rows*(thumb+caption)
	sheet := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(sheet, sheet.Bounds(), image.NewUniform(color.RGBA{20, 20, 20, 255}), image.Point{}, draw.Src)
	head := fmt.Sprintf("phantom seed %d: first %d of %d per lesion and label (+ pos, - neg)", seed, per, n)
	if neg != n {
		head = fmt.Sprintf("phantom seed %d: first %d of %d positives and %d negatives per lesion (+ pos, - neg)", seed, per, n, neg)
	}
	label(sheet, 4, 14, head, colText)
	x := 4
	for _, it := range []struct {
		s string
		c color.RGBA
	}{{"right lung", colRight}, {"left lung", colLeft}, {"heart", colHeart}, {"lesion", colLesion}} {
		label(sheet, x, 30, it.s, it.c)
		x += (len(it.s) + 3) * 7
	}
	row, col := -1, 0
	prevLesion := ""
	for i, cs := range specs {
		if cs.lesion != prevLesion {
			row++
			prevLesion = cs.lesion
			col = 0
		}
		if thumbs[i] == nil {
			continue
		}
		c := col
		if !cs.positive {
			c = per + col - countPos(specs, i, per)
		}
		r := image.Rect(c*thumb, headerH+row*(thumb+caption), (c+1)*thumb, headerH+(row+1)*(thumb+caption))
		draw.Draw(sheet, r, thumbs[i], image.Point{}, draw.Src)
		col++
	}
	return sheet
}

// countPos is how many sheet thumbnails the positives of case i's lesion
// used (the negatives start after them).
func countPos(specs []caseSpec, i, per int) int {
	n := 0
	for j := 0; j < i; j++ {
		if specs[j].lesion == specs[i].lesion && specs[j].positive {
			n++
		}
	}
	return min(n, per)
}
