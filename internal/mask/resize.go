package mask

// ResizeNearest resizes m to dw×dh by nearest neighbour with pixel-centre
// mapping (build.md §1): src_x = min(W−1, ((2x+1)·W) div (2·dw)), the same
// for y with H. A 512² mask becomes an exact 2×2 duplication at 1024².
func ResizeNearest(m Mask, dw, dh int) Mask {
	out := New(dw, dh)
	if m.W == 0 || m.H == 0 || dw <= 0 || dh <= 0 {
		return out
	}
	xs := make([]int, dw)
	for x := range xs {
		xs[x] = min(m.W-1, ((2*x+1)*m.W)/(2*dw))
	}
	prev := -1
	for y := 0; y < dh; y++ {
		sy := min(m.H-1, ((2*y+1)*m.H)/(2*dh))
		dst := out.Row(y)
		if sy == prev {
			copy(dst, out.Row(y-1))
			continue
		}
		src := m.Row(sy)
		for x, sx := range xs {
			dst[x] = src[sx]
		}
		prev = sy
	}
	return out
}
