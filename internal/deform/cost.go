package deform

import (
	"image"
	"math"

	"github.com/chexpercept/chexpercept/internal/mask"
)

// gaussKernel is the normalised 1-D Gaussian of §8.4 step 2: radius
// ceil(3σ), weights exp(−k²/(2σ²)) divided by their sum.
func gaussKernel(sigma float64) []float64 {
	r := int(math.Ceil(3 * sigma))
	if r < 0 {
		r = 0
	}
	k := make([]float64, 2*r+1)
	sum := 0.0
	for i := -r; i <= r; i++ {
		v := 1.0
		if sigma > 0 {
			v = math.Exp(-float64(i*i) / float64(2*sigma*sigma))
		} else if i != 0 {
			v = 0
		}
		k[i+r] = v
		sum += v
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// blur is the separable Gaussian with replicate border, x pass then y pass.
// Each output is Σ_j k[j]·v[j] summed in tap order j = −r … r.
func blur(src []float64, w, h int, k []float64) []float64 {
	dst := make([]float64, w*h)
	blurInto(dst, src, make([]float64, w*h), w, h, k)
	return dst
}

// blurInto is blur writing into dst, with tmp (w·h) for the x pass. dst
// may be src: src is read only by the x pass, which ends before dst is
// written.
func blurInto(dst, src, tmp []float64, w, h int, k []float64) {
	r := len(k) / 2
	pad := make([]float64, w+2*r)
	for y := 0; y < h; y++ {
		row := src[y*w : (y+1)*w]
		// Replicate border through a padded copy of the row.
		for i := 0; i < r; i++ {
			pad[i] = row[0]
			pad[r+w+i] = row[w-1]
		}
		copy(pad[r:], row)
		blurRow(tmp[y*w:(y+1)*w], pad, k)
	}
	rows := make([][]float64, len(k))
	for y := 0; y < h; y++ {
		for j := range rows {
			yy := min(max(y+j-r, 0), h-1)
			rows[j] = tmp[yy*w : (yy+1)*w]
		}
		blurColumns(dst[y*w:(y+1)*w], rows, k)
	}
}

// blurColumns sets out[x] = Σ_j k[j]·rows[j][x], summed in tap order from
// 0, four columns side by side as in blurRow.
func blurColumns(out []float64, rows [][]float64, k []float64) {
	x := 0
	for ; x+4 <= len(out); x += 4 {
		var s0, s1, s2, s3 float64
		for j, kv := range k {
			v := rows[j][x : x+4 : x+4]
			s0 += float64(kv * v[0])
			s1 += float64(kv * v[1])
			s2 += float64(kv * v[2])
			s3 += float64(kv * v[3])
		}
		out[x], out[x+1], out[x+2], out[x+3] = s0, s1, s2, s3
	}
	for ; x < len(out); x++ {
		s := 0.0
		for j, kv := range k {
			s += float64(kv * rows[j][x])
		}
		out[x] = s
	}
}

// blurRow sets out[x] = Σ_j k[j]·pad[x+j], summed in tap order from 0.
// Four outputs are summed side by side: their sums are independent, so
// the processor overlaps them instead of waiting on one chain of
// additions, and each sum still adds the same products in the same order.
func blurRow(out, pad, k []float64) {
	x := 0
	for ; x+4 <= len(out); x += 4 {
		var s0, s1, s2, s3 float64
		win := pad[x : x+len(k)+3]
		for j, kv := range k {
			v := win[j : j+4 : j+4]
			s0 += float64(kv * v[0])
			s1 += float64(kv * v[1])
			s2 += float64(kv * v[2])
			s3 += float64(kv * v[3])
		}
		out[x], out[x+1], out[x+2], out[x+3] = s0, s1, s2, s3
	}
	for ; x < len(out); x++ {
		win := pad[x : x+len(k)]
		s := 0.0
		for j, kv := range k {
			s += float64(kv * win[j])
		}
		out[x] = s
	}
}

// sobelMag is sqrt(gx² + gy²) of the 3×3 Sobel derivatives divided by 8,
// replicate border.
func sobelMag(g []float64, w, h int) []float64 {
	mag := make([]float64, w*h)
	sobelMagInto(mag, g, w, h)
	return mag
}

// sobelMagInto is sobelMag writing into mag (w·h, not g).
func sobelMagInto(mag, g []float64, w, h int) []float64 {
	if w == 0 {
		return mag
	}
	for y := 0; y < h; y++ {
		up := g[max(y-1, 0)*w : max(y-1, 0)*w+w]
		mid := g[y*w : y*w+w]
		dn := g[min(y+1, h-1)*w : min(y+1, h-1)*w+w]
		out := mag[y*w : y*w+w]
		// The edge columns replicate; the interior needs no clamping.
		sobelAt(out, up, mid, dn, 0, 0, min(1, w-1))
		for x := 1; x < w-1; x++ {
			// sobelAt(out, up, mid, dn, x, x-1, x+1), written out: the
			// call is too large to inline and this loop is per pixel.
			a, b, c := up[x-1], up[x], up[x+1]
			d, f := mid[x-1], mid[x+1]
			gg, hh, ii := dn[x-1], dn[x], dn[x+1]
			gx := ((c + float64(2*f) + ii) - (a + float64(2*d) + gg)) / 8
			gy := ((gg + float64(2*hh) + ii) - (a + float64(2*b) + c)) / 8
			out[x] = math.Sqrt(float64(gx*gx) + float64(gy*gy))
		}
		if w > 1 {
			sobelAt(out, up, mid, dn, w-1, w-2, w-1)
		}
	}
	return mag
}

// sobelAt sets out[x] from the columns xl, x, xr of the three rows.
func sobelAt(out, up, mid, dn []float64, x, xl, xr int) {
	a, b, c := up[xl], up[x], up[xr]
	d, f := mid[xl], mid[xr]
	gg, hh, ii := dn[xl], dn[x], dn[xr]
	gx := ((c + float64(2*f) + ii) - (a + float64(2*d) + gg)) / 8
	gy := ((gg + float64(2*hh) + ii) - (a + float64(2*b) + c)) / 8
	out[x] = math.Sqrt(float64(gx*gx) + float64(gy*gy))
}

// percentileIndex is floor(q·(n−1)), the index of §8.4 step 4.
func percentileIndex(q float64, n int) int {
	if n <= 0 {
		return -1
	}
	i := int(math.Floor(float64(q * float64(n-1))))
	return min(max(i, 0), n-1)
}

// selectK returns the k-th smallest value of xs (0-based), reordering xs.
// The value is what a full ascending sort would put at index k.
func selectK(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		// Median of three as pivot; deterministic.
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		p := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < p {
				i++
			}
			for xs[j] > p {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// CostField is the per-case cost of §8.4: c = 1 + α·min(1, mag/P), with mag
// the Sobel magnitude of the blurred image and P its q-quantile over the
// lung union. It returns the field (row-major, w·h) and P.
func CostField(gray *image.Gray, lungs mask.Mask, sigma, alpha, q float64) ([]float64, float64) {
	b := gray.Bounds()
	w, h := b.Dx(), b.Dy()
	var level [256]float64 // v/255 for every grey level: one division each
	for v := range level {
		level[v] = float64(v) / 255
	}
	I := make([]float64, w*h)
	for y := 0; y < h; y++ {
		row := gray.Pix[y*gray.Stride : y*gray.Stride+w]
		out := I[y*w : (y+1)*w]
		for x, v := range row {
			out[x] = level[v]
		}
	}
	// Two w·h buffers serve the whole field: the blur goes back into I
	// through tmp, and the Sobel magnitude, then the cost, into tmp.
	tmp := make([]float64, w*h)
	blurInto(I, I, tmp, w, h, gaussKernel(sigma))
	G := I
	mag := sobelMagInto(tmp, G, w, h)
	var vals []float64
	if lungs.W == w && lungs.H == h {
		vals = make([]float64, 0, lungs.Count())
		for i, v := range lungs.Pix {
			if v != 0 {
				vals = append(vals, mag[i])
			}
		}
	}
	P := 0.0
	if k := percentileIndex(q, len(vals)); k >= 0 {
		P = selectK(vals, k)
	}
	cost := mag // reuse the buffer
	for i, m := range mag {
		gh := 0.0
		if P > 1e-9 {
			gh = min(1, m/P)
		}
		cost[i] = 1 + float64(alpha*gh)
	}
	return cost, P
}
