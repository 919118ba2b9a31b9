package imagefile

import (
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A zlib stream (RFC 1950) is a two-byte header (CMF: compression method
// and window size; FLG: check bits, preset-dictionary flag, level), an
// optional four-byte dictionary identifier, deflate data (RFC 1951) and
// the Adler-32 of the inflated bytes, most significant byte first.

// inflateZlib reads one zlib stream from src and passes its inflated
// bytes to use, in order, in pieces. The stream must inflate to exactly
// want bytes; inflation stops at the first byte beyond. Bytes in src
// after the checksum are not read.
func inflateZlib(src flate.Reader, want int64, use func([]byte) error) error {
	var head [2]byte
	if err := readBytes(src, head[:]); err != nil {
		return fmt.Errorf("zlib header: %w", err)
	}
	cmf, flg := head[0], head[1]
	switch {
	case cmf&0x0f != 8:
		return fmt.Errorf("zlib header: compression method %d, not deflate (8)", cmf&0x0f)
	case cmf>>4 > 7:
		return fmt.Errorf("zlib header: window size 2^%d, more than 32 KiB", 8+cmf>>4)
	case (uint(cmf)<<8|uint(flg))%31 != 0:
		return errors.New("zlib header: check bits (FCHECK) do not match")
	}
	if flg&0x20 != 0 {
		// A preset dictionary. PNG never uses one, and image/png offers
		// its zlib reader none; that reader accepts the identifier of the
		// empty dictionary, whose Adler-32 is 1, and nothing else.
		var id [4]byte
		if err := readBytes(src, id[:]); err != nil {
			return fmt.Errorf("zlib dictionary identifier: %w", err)
		}
		if binary.BigEndian.Uint32(id[:]) != 1 {
			return errors.New("zlib stream needs a preset dictionary")
		}
	}

	inflater := flate.NewReader(src)
	out := make([]byte, 32<<10)
	sum := uint32(1)
	var got int64
	for {
		n, err := inflater.Read(out)
		if n > 0 {
			if got+int64(n) > want {
				return fmt.Errorf("more than the %d bytes the rows take", want)
			}
			got += int64(n)
			sum = adler32(sum, out[:n])
			if uerr := use(out[:n]); uerr != nil {
				return uerr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				return fmt.Errorf("deflate data cut short after %d of %d bytes", got, want)
			}
			return fmt.Errorf("deflate data: %w", err)
		}
	}
	var trailer [4]byte
	if err := readBytes(src, trailer[:]); err != nil {
		return fmt.Errorf("zlib checksum: %w", err)
	}
	if binary.BigEndian.Uint32(trailer[:]) != sum {
		return errors.New("zlib checksum (Adler-32) mismatch")
	}
	if got < want {
		return fmt.Errorf("%d bytes, but the rows take %d", got, want)
	}
	return nil
}

// readBytes fills p from r one byte at a time; the end of r is
// io.ErrUnexpectedEOF.
func readBytes(r io.ByteReader, p []byte) error {
	for i := range p {
		c, err := r.ReadByte()
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		p[i] = c
	}
	return nil
}

// adler32 continues the Adler-32 checksum sum over p (start from 1).
// RFC 1950 defines it as two sums modulo 65521 over the bytes c₁…cₙ:
// A = 1 + c₁ + … + cₙ and B = A₁ + … + Aₙ, the sum of A after each byte.
// Adding one byte at a time makes every addition wait on the one before;
// this instead reads eight bytes at a time and keeps per-position sums in
// the four 16-bit lanes of two words (bytes at even positions in one,
// odd in the other), turning them into A and B once per block.
//
// For a block of n = 8·g bytes after sums (A, B), with G_k the total of
// group k and C_j the total of the bytes at position j of their group:
//
//	A' = A + Σ G_k
//	B' = B + n·A + Σᵢ (n-i)·cᵢ
//	   = B + n·A + 8·Σ_k (g-1-k)·G_k + Σ_j (8-j)·C_j
//
// and Σ_k (g-1-k)·G_k is the sum, over the groups, of the totals of the
// groups before each.
func adler32(sum uint32, p []byte) uint32 {
	const mod = 65521
	a, b := uint64(sum&0xffff), uint64(sum>>16)
	for len(p) >= adlerBlock {
		var tot, weighted, before uint64
		// Up to 2¹⁹ blocks at a time: the sums stay far below 2⁶⁴.
		run := p[:min(len(p), adlerBlock<<19)&^(adlerBlock-1)]
		for q := run; len(q) > 0; q = q[adlerBlock:] {
			even, odd, prefix := adlerLanes(q[:adlerBlock])
			gsum := laneSum(even) + laneSum(odd)
			// Each earlier block counts once for each of this block's
			// groups.
			before += laneSum(prefix) + adlerBlock/8*tot
			tot += gsum
			weighted += 8*(even&0xffff) + 6*(even>>16&0xffff) + 4*(even>>32&0xffff) + 2*(even>>48) +
				7*(odd&0xffff) + 5*(odd>>16&0xffff) + 3*(odd>>32&0xffff) + odd>>48
		}
		b = (b + uint64(len(run))%mod*a + 8*before + weighted) % mod
		a = (a + tot) % mod
		p = p[len(run):]
	}
	for _, c := range p {
		a += uint64(c)
		b += a
	}
	return uint32(b%mod<<16 | a%mod)
}

// adlerBlock is the bytes one call of adlerLanes takes: 16 groups of
// eight, the most for which no 16-bit lane of its prefix sum can overflow
// (each lane adds at most 2·255 per group: 510·(0+1+…+15) < 2¹⁶).
const adlerBlock = 128

// adlerLanes sums one block in 16-bit lanes: even and odd hold the totals
// of the bytes at even and odd positions of the groups, lane by lane;
// prefix holds, lane by lane, the totals of the groups before each group.
func adlerLanes(blk []byte) (even, odd, prefix uint64) {
	const bytes02 = 0x00ff00ff00ff00ff
	blk = blk[:adlerBlock]
	for i := 0; i < adlerBlock; i += 16 {
		x := binary.LittleEndian.Uint64(blk[i:])
		y := binary.LittleEndian.Uint64(blk[i+8:])
		xe, xo := x&bytes02, x>>8&bytes02
		// The first group sees the block so far; the second also sees
		// the first.
		prefix += 2*(even+odd) + xe + xo
		even += xe + y&bytes02
		odd += xo + y>>8&bytes02
	}
	return even, odd, prefix
}

// laneSum adds the four 16-bit lanes of v.
func laneSum(v uint64) uint64 {
	return v&0xffff + v>>16&0xffff + v>>32&0xffff + v>>48
}
