package imagefile

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	adler32pkg "hash/adler32"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chexpercept/chexpercept/internal/imagefile/imagefiletest"
	"github.com/chexpercept/chexpercept/internal/safefile"
)

// pngSpec describes a PNG written by rawPNG: any valid bit depth and
// colour type (image/png's encoder writes only some), Adam7 interlacing
// (which it never writes), and deliberate faults in the image data.
type pngSpec struct {
	w, h          int
	depth, colour byte
	interlace     byte
	plte          int    // palette entries; 0: no PLTE chunk
	trns          int    // tRNS length; 0: no tRNS chunk
	split         int    // IDAT chunk size; 0: one chunk
	extra         int    // inflated bytes past the image (negative: missing)
	tail          int    // bytes after the zlib stream, in the last IDAT
	filter        int    // every row's filter type; -1: random 0…4
	seed          uint64 // the samples, palette and colours
	level         int    // zlib level
}

// passes gives the (width, height) of the non-empty passes: the whole
// image, or Adam7's seven sub-images.
func (s pngSpec) passes() [][2]int {
	if s.interlace == 0 {
		return [][2]int{{s.w, s.h}}
	}
	var out [][2]int
	for _, p := range adam7 {
		w, h := (s.w-p[2]+p[0]-1)/p[0], (s.h-p[3]+p[1]-1)/p[1]
		if w > 0 && h > 0 {
			out = append(out, [2]int{w, h})
		}
	}
	return out
}

// inflated is the filtered image data: rows of a filter byte and random
// samples, pass after pass.
func (s pngSpec) inflated(r *rand.Rand) []byte {
	bpp := bitsPerPixel[[2]byte{s.depth, s.colour}]
	if bpp == 0 {
		bpp = 8 // invalid combinations still get some data
	}
	var raw []byte
	for _, p := range s.passes() {
		for y := 0; y < p[1]; y++ {
			f := byte(s.filter)
			if s.filter < 0 {
				f = byte(r.IntN(5))
			}
			raw = append(raw, f)
			for range (bpp*p[0] + 7) / 8 {
				raw = append(raw, byte(r.Uint32()))
			}
		}
	}
	if s.extra < 0 {
		return raw[:max(0, len(raw)+s.extra)]
	}
	for range s.extra {
		raw = append(raw, byte(r.Uint32()))
	}
	return raw
}

func (s pngSpec) bytes() []byte {
	r := rand.New(rand.NewPCG(s.seed, 7))
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, s.level)
	zw.Write(s.inflated(r))
	zw.Close()
	for range s.tail {
		z.WriteByte(byte(r.Uint32()))
	}
	out := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(s.w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(s.h))
	out = appendChunk(out, "IHDR", append(ihdr, s.depth, s.colour, 0, 0, s.interlace))
	if s.plte > 0 {
		out = appendChunk(out, "PLTE", randBytes(r, 3*s.plte))
	}
	if s.trns > 0 {
		out = appendChunk(out, "tRNS", randBytes(r, s.trns))
	}
	data := z.Bytes()
	for s.split > 0 && len(data) > s.split {
		out, data = appendChunk(out, "IDAT", data[:s.split]), data[s.split:]
	}
	out = appendChunk(out, "IDAT", data)
	return appendChunk(out, "IEND", nil)
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func appendChunk(out []byte, typ string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(append(out, typ...), data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}

// pngChunk is one chunk of a file, as split by chunks.
type pngChunk struct {
	typ  string
	data []byte
}

// chunks splits a well-formed file after its signature.
func chunks(b []byte) []pngChunk {
	var out []pngChunk
	for b = b[8:]; len(b) >= 12; {
		n := int(binary.BigEndian.Uint32(b))
		out = append(out, pngChunk{string(b[4:8]), b[8 : 8+n]})
		b = b[12+n:]
	}
	return out
}

func join(cs []pngChunk) []byte {
	out := []byte("\x89PNG\r\n\x1a\n")
	for _, c := range cs {
		out = appendChunk(out, c.typ, c.data)
	}
	return out
}

// validSpecs lists files image/png decodes: every valid bit depth and
// colour type, plain and interlaced, with and without tRNS, IDAT split
// in various ways, and its tolerances (palette indices past the palette,
// a tRNS longer than the palette, a PLTE in a truecolour image).
func validSpecs() []pngSpec {
	var out []pngSpec
	combos := [][3]int{ // depth, colour, tRNS length
		{1, 0, 0}, {2, 0, 2}, {4, 0, 0}, {8, 0, 2}, {16, 0, 0}, {8, 2, 6}, {16, 2, 0},
		{1, 3, 2}, {2, 3, 0}, {4, 3, 16}, {8, 3, 200}, {8, 4, 0}, {16, 4, 0}, {8, 6, 0}, {16, 6, 0},
	}
	sizes := [][2]int{{1, 1}, {3, 5}, {9, 2}, {17, 11}, {40, 33}}
	seed := uint64(0)
	for _, c := range combos {
		for il := range byte(2) {
			for _, sz := range sizes {
				seed++
				s := pngSpec{w: sz[0], h: sz[1], depth: byte(c[0]), colour: byte(c[1]), interlace: il,
					trns: c[2], filter: -1, seed: seed, level: int(seed % 10)}
				switch {
				case c[1] == 3:
					s.plte = min(1<<c[0], 3) // indices past the palette are tolerated
				case c[1] == 2 && seed%2 == 0:
					s.plte = 5 // optional, ignored
				}
				if seed%3 == 0 {
					s.split = 1 + int(seed%50)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// encoded adds files from image/png's own encoder.
func encoded(t testing.TB) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	rect := image.Rect(0, 0, 23, 19)
	gray, gray16, nrgba, rgba64 := image.NewGray(rect), image.NewGray16(rect), image.NewNRGBA(rect), image.NewRGBA64(rect)
	pal := image.NewPaletted(rect, color.Palette{color.Black, color.NRGBA{9, 8, 7, 128}, color.White})
	for _, pix := range [][]byte{gray.Pix, gray16.Pix, nrgba.Pix, rgba64.Pix} {
		copy(pix, randBytes(r, len(pix)))
	}
	for i := range pal.Pix {
		pal.Pix[i] = byte(r.IntN(3))
	}
	var out [][]byte
	for _, img := range []image.Image{gray, gray16, nrgba, rgba64, pal} {
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	return out
}

// agree checks the property: VerifyPNG accepts exactly when DecodePNG
// (the header check, then png.Decode) decodes. It returns the verdict.
func agree(t *testing.T, what string, b []byte) bool {
	t.Helper()
	_, derr := DecodePNG(b)
	verr := VerifyPNG(b)
	if (derr == nil) != (verr == nil) {
		t.Errorf("%s: VerifyPNG says %v, DecodePNG says %v", what, verr, derr)
	}
	return derr == nil
}

func TestVerifyPNGTable(t *testing.T) {
	gray := pngSpec{w: 20, h: 7, depth: 8, colour: 0, filter: 0, level: 6}
	il := gray
	il.interlace = 1
	tests := []struct {
		name string
		spec pngSpec
		want bool
	}{
		{"gray", gray, true},
		{"interlaced", il, true},
		{"filter 4", func() pngSpec { s := gray; s.filter = 4; return s }(), true},
		{"filter 5", func() pngSpec { s := gray; s.filter = 5; return s }(), false},
		{"interlaced filter 5", func() pngSpec { s := il; s.filter = 5; return s }(), false},
		{"one byte short", func() pngSpec { s := gray; s.extra = -1; return s }(), false},
		{"interlaced one byte short", func() pngSpec { s := il; s.extra = -1; return s }(), false},
		{"one byte too many", func() pngSpec { s := gray; s.extra = 1; return s }(), false},
		{"bytes after the zlib stream", func() pngSpec { s := gray; s.tail = 3; return s }(), true},
		// image/png reads an IDAT chunk through a 4 KB buffer: bytes after
		// the stream that the buffer did not take are "too much pixel data".
		{"4 KB after the zlib stream", func() pngSpec { s := gray; s.tail = 4096; return s }(), false},
		{"4 KB after the zlib stream, in a later IDAT", func() pngSpec { s := gray; s.tail = 4096; s.split = 4096; return s }(), true},
		{"bit depth 16 paletted", pngSpec{w: 2, h: 2, depth: 16, colour: 3, plte: 1, level: 6}, false},
		{"bit depth 3", pngSpec{w: 2, h: 2, depth: 3, colour: 0, level: 6}, false},
		{"paletted without PLTE", pngSpec{w: 2, h: 2, depth: 8, colour: 3, level: 6}, false},
		{"PLTE longer than the depth allows", pngSpec{w: 2, h: 2, depth: 1, colour: 3, plte: 3, level: 6}, false},
		{"PLTE in a grey image", pngSpec{w: 2, h: 2, depth: 8, colour: 0, plte: 3, level: 6}, false},
		{"tRNS longer than 256", pngSpec{w: 2, h: 2, depth: 8, colour: 3, plte: 3, trns: 257, level: 6}, false},
		{"tRNS of 4 bytes in a grey image", pngSpec{w: 2, h: 2, depth: 8, colour: 0, trns: 4, level: 6}, false},
		{"tRNS in a grey and alpha image", pngSpec{w: 2, h: 2, depth: 8, colour: 4, trns: 2, level: 6}, false},
	}
	for _, tc := range tests {
		if got := agree(t, tc.name, tc.spec.bytes()); got != tc.want {
			t.Errorf("%s: decodes %v, want %v", tc.name, got, tc.want)
		}
	}
	for i, s := range validSpecs() {
		if !agree(t, fmt.Sprintf("valid spec %d %+v", i, s), s.bytes()) {
			t.Errorf("valid spec %d %+v does not decode", i, s)
		}
	}
	for i, b := range encoded(t) {
		if !agree(t, fmt.Sprintf("encoded %d", i), b) {
			t.Errorf("encoded %d does not decode", i)
		}
	}
}

// TestVerifyPNGChunks edits chunks with their CRCs recomputed, so that
// the checks behind the CRC are reached.
func TestVerifyPNGChunks(t *testing.T) {
	base := pngSpec{w: 10, h: 6, depth: 8, colour: 3, plte: 4, trns: 2, filter: -1, split: 40, level: 9}.bytes()
	cs := chunks(base)
	edit := func(f func([]pngChunk) []pngChunk) []byte {
		return join(f(append([]pngChunk(nil), cs...)))
	}
	insert := func(i int, c pngChunk) []byte {
		return edit(func(cs []pngChunk) []pngChunk { return append(cs[:i], append([]pngChunk{c}, cs[i:]...)...) })
	}
	text := pngChunk{"tEXt", []byte("a\x00b")}
	last := len(cs) - 1 // IEND
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"as written", join(cs), true},
		{"text before IHDR", insert(0, text), true},
		{"text after IEND", append(join(cs), appendChunk(nil, "tEXt", nil)...), true},
		{"garbage after IEND", append(join(cs), "garbage"...), true},
		{"text between IDATs", insert(4, text), false},
		{"unknown critical chunk", insert(1, pngChunk{"ABCD", []byte{1}}), true},
		{"empty IDAT first", insert(3, pngChunk{"IDAT", nil}), true},
		{"trailing IDAT of garbage", insert(last, pngChunk{"IDAT", []byte("xyz")}), true},
		{"trailing IDAT after text", edit(func(cs []pngChunk) []pngChunk {
			return append(cs[:last], text, pngChunk{"IDAT", []byte("xyz")}, cs[last])
		}), true},
		{"no IEND", edit(func(cs []pngChunk) []pngChunk { return cs[:last] }), false},
		{"IEND with data", edit(func(cs []pngChunk) []pngChunk { cs[last].data = []byte{0}; return cs }), false},
		{"second IHDR", insert(1, cs[0]), false},
		{"second PLTE", insert(2, cs[1]), false},
		{"tRNS before PLTE", edit(func(cs []pngChunk) []pngChunk { cs[1], cs[2] = cs[2], cs[1]; return cs }), false},
		{"no IDAT", edit(func(cs []pngChunk) []pngChunk { return []pngChunk{cs[0], cs[1], cs[2], cs[last]} }), false},
		{"IHDR length 12", edit(func(cs []pngChunk) []pngChunk { cs[0].data = cs[0].data[:12]; return cs }), false},
		{"unknown chunk too long", append(join(cs[:last]), 0x80, 0, 0, 0, 't', 'E', 'X', 't'), false},
	}
	for _, tc := range tests {
		if got := agree(t, tc.name, tc.b); got != tc.want {
			t.Errorf("%s: decodes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestVerifyPNGAdam7 checks the test's Adam7 writer on real pixels, so
// that the interlaced files above are what they claim.
func TestVerifyPNGAdam7(t *testing.T) {
	const w, h = 13, 10
	src := image.NewGray(image.Rect(0, 0, w, h))
	copy(src.Pix, randBytes(rand.New(rand.NewPCG(3, 4)), len(src.Pix)))
	var raw []byte
	for _, p := range adam7 {
		for y := p[3]; y < h; y += p[1] {
			if p[2] >= w {
				break
			}
			raw = append(raw, 0)
			for x := p[2]; x < w; x += p[0] {
				raw = append(raw, src.GrayAt(x, y).Y)
			}
		}
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	b := appendChunk([]byte("\x89PNG\r\n\x1a\n"), "IHDR", []byte{0, 0, 0, w, 0, 0, 0, h, 8, 0, 0, 0, 1})
	b = appendChunk(appendChunk(b, "IDAT", z.Bytes()), "IEND", nil)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img.(*image.Gray).Pix, src.Pix) {
		t.Fatal("the Adam7 writer does not interlace as image/png reads")
	}
	if err := VerifyPNG(b); err != nil {
		t.Fatal(err)
	}
}

// mutants derives hostile variants of a valid file: byte flips anywhere,
// truncations, chunk data edits and length edits with the CRC fixed, and
// edits of the zlib stream with the IDAT CRCs fixed.
func mutants(b []byte, seed uint64, n int, emit func(what string, b []byte)) {
	r := rand.New(rand.NewPCG(seed, 11))
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= byte(1 + r.IntN(255))
		return c
	}
	for range n {
		i := r.IntN(len(b))
		emit(fmt.Sprintf("flip at %d", i), flip(b, i))
	}
	step := max(1, len(b)/n)
	for l := 0; l < len(b); l += step {
		emit(fmt.Sprintf("truncated to %d", l), b[:l])
	}
	cs := chunks(b)
	var z []byte
	for _, c := range cs {
		if c.typ == "IDAT" {
			z = append(z, c.data...)
		}
	}
	for range n {
		k := r.IntN(len(cs))
		e := append([]pngChunk(nil), cs...)
		switch d := e[k].data; {
		case r.IntN(3) == 0 || len(d) == 0:
			delta := r.IntN(9) - 4
			e[k].data = append(bytes.Clone(d[:max(0, len(d)+min(0, delta))]), randBytes(r, max(0, delta))...)
			emit(fmt.Sprintf("chunk %d %s resized by %d", k, e[k].typ, delta), join(e))
			if len(d) > 0 {
				c := join(cs)
				off := chunkOffset(cs, k)
				binary.BigEndian.PutUint32(c[off:], uint32(len(d)+delta))
				emit(fmt.Sprintf("chunk %d %s length field %+d", k, e[k].typ, delta), c)
			}
		default:
			e[k].data = flip(d, r.IntN(len(d)))
			emit(fmt.Sprintf("chunk %d %s data flipped, CRC fixed", k, e[k].typ), join(e))
		}
		zi := r.IntN(len(z))
		emit(fmt.Sprintf("zlib byte %d flipped, CRC fixed", zi), withIDAT(cs, flip(z, zi), 1+r.IntN(len(z))))
		tail := append(bytes.Clone(z), randBytes(r, 1+r.IntN(6000))...)
		emit(fmt.Sprintf("zlib stream of %d with %d after it", len(z), len(tail)-len(z)),
			withIDAT(cs, tail, []int{len(tail), 4096, 1 + r.IntN(len(tail))}[r.IntN(3)]))
		emit("zlib stream cut", withIDAT(cs, z[:r.IntN(len(z))], len(z)))
	}
}

// chunkOffset is where chunk k's length field is in join(cs).
func chunkOffset(cs []pngChunk, k int) int {
	off := 8
	for _, c := range cs[:k] {
		off += 12 + len(c.data)
	}
	return off
}

// withIDAT replaces the image data of cs by z, in chunks of split bytes.
func withIDAT(cs []pngChunk, z []byte, split int) []byte {
	var out []pngChunk
	done := false
	for _, c := range cs {
		if c.typ != "IDAT" {
			out = append(out, c)
			continue
		}
		for d := z; !done; d = d[min(split, len(d)):] {
			out = append(out, pngChunk{"IDAT", d[:min(split, len(d))]})
			done = len(d) <= split
		}
	}
	return join(out)
}

// TestVerifyPNGMutants: thousands of mutants of every kind of file, and
// VerifyPNG agrees with image/png on each.
func TestVerifyPNGMutants(t *testing.T) {
	var files [][]byte
	for i, s := range validSpecs() {
		if i%3 == 0 || s.w*s.h > 100 {
			files = append(files, s.bytes())
		}
	}
	files = append(files, encoded(t)...)
	var ok, bad int
	for i, b := range files {
		mutants(b, uint64(i), 40, func(what string, m []byte) {
			if agree(t, fmt.Sprintf("file %d, %s", i, what), m) {
				ok++
			} else {
				bad++
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d files: %d mutants decode, %d do not", len(files), ok, bad)
	if ok < 500 || bad < 5000 {
		t.Errorf("%d mutants decode and %d do not: too few of one kind to test the property", ok, bad)
	}
}

// TestVerifyPNGBomb: a decompression bomb is refused by the header check.
func TestVerifyPNGBomb(t *testing.T) {
	for _, side := range []uint32{100000, 16384, 9000} {
		err := VerifyPNG(imagefiletest.BombPNG(side, side))
		if !errors.Is(err, safefile.ErrTooLarge) {
			t.Errorf("%d² bomb: %v, want ErrTooLarge", side, err)
		}
	}
	err := VerifyPNG([]byte("GIF89a"))
	if err == nil || !strings.HasPrefix(err.Error(), "not a decodable PNG: ") {
		t.Errorf("GIF: %v", err)
	}
}

func FuzzVerifyPNG(f *testing.F) {
	for i, s := range validSpecs() {
		if i%4 == 0 {
			f.Add(s.bytes())
		}
	}
	for _, b := range encoded(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Large images only make DecodePNG allocate; the rules are the same.
		if _, w, h, err := Header(b, PNG); err == nil && w*h > 1<<16 {
			t.Skip()
		}
		agree(t, "fuzz input", b)
		// Most mutations break a CRC; with them fixed the fuzzer reaches
		// the checks behind.
		agree(t, "fuzz input with CRCs fixed", fixCRCs(b))
	})
}

// fixCRCs recomputes the CRC of every whole chunk after the signature.
func fixCRCs(b []byte) []byte {
	b = bytes.Clone(b)
	for off := 8; off+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		if n < 0 || n > len(b)-off-12 {
			break
		}
		binary.BigEndian.PutUint32(b[off+8+n:], crc32.ChecksumIEEE(b[off+4:off+8+n]))
		off += 12 + n
	}
	return b
}

// BenchmarkPNGCheck compares a full decode with VerifyPNG on a phantom-like
// 1024² RGB image (a radial gradient with noise, like a radiograph) and on
// the flat grey image of the eval benchmarks.
func BenchmarkPNGCheck(b *testing.B) {
	img := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
	r := rand.New(rand.NewPCG(5, 99))
	for y := range 1024 {
		for x := range 1024 {
			g := uint8(min(255, 60+(x*x+y*y)/16384+r.IntN(8)))
			i := img.PixOffset(x, y)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = g, g, g, 255
		}
	}
	flat := image.NewNRGBA(img.Rect)
	for i := range flat.Pix {
		flat.Pix[i] = []byte{96, 96, 96, 255}[i%4]
	}
	files := map[string][]byte{}
	for name, e := range map[string]struct {
		img   image.Image
		level png.CompressionLevel
	}{"phantom": {img, png.BestSpeed}, "flat": {flat, png.BestCompression}} {
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: e.level}).Encode(&buf, e.img); err != nil {
			b.Fatal(err)
		}
		files[name] = buf.Bytes()
	}
	for _, name := range []string{"phantom", "flat"} {
		data := files[name]
		b.Run(name+"/DecodePNG", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := DecodePNG(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/VerifyPNG", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := VerifyPNG(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdler32 compares the fast Adler-32 with hash/adler32 for every short
// length, long inputs of bytes 0xff (the lanes' worst case), and updates
// that start from another checksum.
func TestAdler32(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	check := func(p []byte) {
		t.Helper()
		if got, want := adler32(1, p), adler32pkg.Checksum(p); got != want {
			t.Fatalf("%d bytes: %08x, want %08x", len(p), got, want)
		}
	}
	for n := range 300 {
		check(randBytes(r, n))
	}
	for _, n := range []int{128, 8 * 4096, 8*4096 + 7, 8*4096*3 + 5, 1 << 20, 8<<20 + 13} {
		check(randBytes(r, n))
		check(bytes.Repeat([]byte{0xff}, n))
	}
	// Chained updates equal one update of the concatenation.
	for range 200 {
		p := randBytes(r, r.IntN(70000))
		cut := r.IntN(len(p) + 1)
		if got, want := adler32(adler32(1, p[:cut]), p[cut:]), adler32pkg.Checksum(p); got != want {
			t.Fatalf("%d bytes cut at %d: %08x, want %08x", len(p), cut, got, want)
		}
	}
}

// BenchmarkAdler32 compares adler32 with hash/adler32 on the inflated size
// of a 1024² RGB image.
func BenchmarkAdler32(b *testing.B) {
	p := randBytes(rand.New(rand.NewPCG(1, 1)), 3<<20)
	b.Run("imagefile", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			adler32(1, p)
		}
	})
	b.Run("hash-adler32", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			adler32pkg.Checksum(p)
		}
	})
}
