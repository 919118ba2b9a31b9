package validate

import (
	"crypto/sha256"
	"encoding/binary"
	"image"
	"image/draw"
	"io"
)

// imageDigest identifies a decoded option image: the SHA-256 of its pixels
// (as 8-bit RGBA, with the size) and of the bytes the decoder read.
type imageDigest struct {
	pixels, raw [sha256.Size]byte
	read, size  int64 // bytes the decoder read; the file's size
}

// byteIdentical reports whether both files are the same bytes: the same
// size, each read to its end, and the same hash.
func (d *imageDigest) byteIdentical(o *imageDigest) bool {
	return d.size == o.size && d.read == d.size && o.read == o.size && d.raw == o.raw
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// pixelDigest hashes img's size and pixels in one canonical form (8-bit
// RGBA), so two files that decode to the same picture hash alike whatever
// their PNG colour type or compression.
func pixelDigest(img image.Image) [sha256.Size]byte {
	b := img.Bounds()
	rgba, ok := img.(*image.RGBA)
	if !ok || b.Min != (image.Point{}) || rgba.Stride != 4*b.Dx() {
		rgba = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	}
	h := sha256.New()
	var hdr [16]byte
	binary.BigEndian.PutUint64(hdr[:8], uint64(b.Dx()))
	binary.BigEndian.PutUint64(hdr[8:], uint64(b.Dy()))
	h.Write(hdr[:])
	h.Write(rgba.Pix[:4*b.Dx()*b.Dy()])
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// checkIdenticalOptions reports each distractor whose image shows exactly
// the answer's picture (byte-identical, or the same pixels): the
// revision-result question then has two right answers. It needs the
// digests of deep mode; without them it checks nothing.
func checkIdenticalOptions(r *recInfo, digests map[string]*imageDigest, loc string, s *sink) {
	answer := 0
	for k, o := range r.options {
		if o.typ == "true" && o.file != "" {
			answer = k + 1
		}
	}
	if answer == 0 {
		return // reported by the JSON checks
	}
	ad := digests[r.options[answer-1].file]
	if ad == nil {
		return
	}
	for k, o := range r.options {
		if k+1 == answer || o.file == "" {
			continue
		}
		d := digests[o.file]
		if d == nil || d.pixels != ad.pixels {
			continue
		}
		how := "shows the same pixels as"
		if d.byteIdentical(ad) {
			how = "is a byte-identical copy of"
		}
		s.add(Error, "identical_option_images", r.key, loc+"/"+o.file,
			"distractor option %d %s the answer's image (option %d): the question has two right answers", k+1, how, answer)
	}
}
