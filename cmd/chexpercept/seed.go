package main

import (
	"errors"
	"strconv"
	"strings"
)

// seedValue is the value of every command's seed flag (--build-seed,
// --sample-seed, --assign-seed, --phantom-seed; see aliases.go): a uint64, so that one seed names one RNG label
// (…/<seed>/…) everywhere. A negative value is refused with a sentence
// rather than strconv's "invalid syntax".
type seedValue uint64

func (s *seedValue) String() string { return strconv.FormatUint(uint64(*s), 10) }
func (s *seedValue) Type() string   { return "uint64" }

func (s *seedValue) Set(v string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(v), 0, 64)
	switch {
	case err == nil:
		*s = seedValue(n)
		return nil
	case strings.HasPrefix(strings.TrimSpace(v), "-"):
		return errors.New("a seed must not be negative (0 to 18446744073709551615)")
	case errors.Is(err, strconv.ErrRange):
		return errors.New("a seed must be at most 18446744073709551615")
	}
	return errors.New("a seed is a whole number from 0 to 18446744073709551615")
}
