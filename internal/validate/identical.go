package validate

import (
	"encoding/binary"
	"hash/maphash"
	"image"
	"image/draw"
)

// digestSeed keys the option-image hashes. A seeded 64-bit hash is ample
// for telling pictures apart within one record (a chance match is about
// 2⁻⁶⁴, and the seed is secret, so no file can be made to collide), and it
// costs a tenth of SHA-256 on the 4 MiB of pixels of each option image.
var digestSeed = maphash.MakeSeed()

// imageDigest identifies a decoded option image: the hash of its pixels
// (as 8-bit RGBA, with the size) and of the bytes the decoder read.
type imageDigest struct {
	pixels, raw uint64
	read, size  int64 // bytes the decoder read; the file's size
}

// byteIdentical reports whether both files are the same bytes: the same
// size, each read to its end, and the same hash.
func (d *imageDigest) byteIdentical(o *imageDigest) bool {
	return d.size == o.size && d.read == d.size && o.read == o.size && d.raw == o.raw
}

// pixelDigest hashes img's size and pixels in one canonical form (8-bit
// RGBA), so two files that decode to the same picture hash alike whatever
// their PNG colour type or compression.
func pixelDigest(img image.Image) uint64 {
	b := img.Bounds()
	rgba, ok := img.(*image.RGBA)
	if !ok || b.Min != (image.Point{}) || rgba.Stride != 4*b.Dx() {
		rgba = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	var hdr [16]byte
	binary.BigEndian.PutUint64(hdr[:8], uint64(b.Dx()))
	binary.BigEndian.PutUint64(hdr[8:], uint64(b.Dy()))
	h.Write(hdr[:])
	h.Write(rgba.Pix[:4*b.Dx()*b.Dy()])
	return h.Sum64()
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
