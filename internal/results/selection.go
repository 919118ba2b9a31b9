package results

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/rng"
	"github.com/chexpercept/chexpercept/internal/textsafe"
)

// ParseShard reads "i/n" or "auto/n". For auto, i comes from
// JOB_COMPLETION_INDEX (0-based) or SLURM_ARRAY_TASK_ID −
// SLURM_ARRAY_TASK_MIN + 1; getenv is os.Getenv in production. Errors
// start with the value (the command puts its flag in front).
func ParseShard(s string, getenv func(string) string) (*Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return nil, fmt.Errorf("%q: want i/n or auto/n", s)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%q: n must be a positive integer", s)
	}
	var i int
	if is == "auto" {
		switch {
		case getenv("JOB_COMPLETION_INDEX") != "":
			v, err := strconv.Atoi(getenv("JOB_COMPLETION_INDEX"))
			if err != nil {
				return nil, errors.New("auto: JOB_COMPLETION_INDEX is not an integer")
			}
			i = v + 1
		case getenv("SLURM_ARRAY_TASK_ID") != "":
			id, err1 := strconv.Atoi(getenv("SLURM_ARRAY_TASK_ID"))
			lo, err2 := strconv.Atoi(getenv("SLURM_ARRAY_TASK_MIN"))
			if err1 != nil || err2 != nil {
				return nil, errors.New("auto: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_MIN must both be integers")
			}
			i = id - lo + 1
		default:
			return nil, fmt.Errorf("auto/%d: neither JOB_COMPLETION_INDEX nor SLURM_ARRAY_TASK_ID is set", n)
		}
	} else if i, err = strconv.Atoi(is); err != nil {
		return nil, fmt.Errorf("%q: i must be an integer or auto", s)
	}
	if i < 1 || i > n {
		return nil, fmt.Errorf("%q: shard index %d is outside 1..%d", s, i, n)
	}
	return &Shard{I: i, N: n}, nil
}

// ParseLesions splits a comma-separated lesion list, checks the form of
// every name and returns them sorted and deduplicated. Whether each is a
// lesion of the benchmark is checked once it is loaded (CheckLesions).
func ParseLesions(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, l := range strings.Split(s, ",") {
		l = strings.TrimSpace(l)
		if !benchmark.KeyIDPattern.MatchString(l + "_x_positive_0") {
			return nil, fmt.Errorf("%q is not a lesion name (lowercase letters and digits)", textsafe.OneLine(l))
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// KeysHash is the SHA-256 of the selected key_ids in file order, each
// followed by "\n".
func KeysHash(keys []string) string {
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ErrUnknownLesion is a selected lesion that the benchmark does not have.
var ErrUnknownLesion = errors.New("unknown lesion")

// CheckLesions checks that every lesion of the selection is one of the
// benchmark's.
func CheckLesions(sel Selection, set *benchmark.LesionSet) error {
	for _, l := range sel.Lesions {
		if !set.Has(l) {
			return fmt.Errorf("%w %q (this benchmark has %s)", ErrUnknownLesion, textsafe.OneLine(l), set.Describe())
		}
	}
	return nil
}

// Select applies the selection to recs (in file order) and returns the
// selected indexes into recs, ascending (records are always evaluated in
// file order).
func Select(recs []*benchmark.Record, sel Selection) ([]int, error) {
	idx := make([]int, 0, len(recs))
	for i, r := range recs {
		if len(sel.Lesions) == 0 || slices.Contains(sel.Lesions, r.Lesion) {
			idx = append(idx, i)
		}
	}
	switch {
	case sel.PerPathLimit != nil:
		if *sel.PerPathLimit < 0 {
			return nil, fmt.Errorf("selection per_path_limit %d is negative", *sel.PerPathLimit)
		}
		var out []int
		for _, p := range []benchmark.Path{benchmark.LesionFree, benchmark.RevisionFree, benchmark.RevisionRequired} {
			n := 0
			for _, i := range idx {
				if n < *sel.PerPathLimit && recs[i].Path() == p {
					out = append(out, i)
					n++
				}
			}
		}
		idx = out
	case sel.Limit != nil:
		if *sel.Limit < 0 {
			return nil, fmt.Errorf("selection limit %d is negative", *sel.Limit)
		}
		if *sel.Limit < len(idx) {
			idx = idx[:*sel.Limit]
		}
	}
	if sel.Sample != nil {
		if *sel.Sample < 0 {
			return nil, fmt.Errorf("selection sample %d is negative", *sel.Sample)
		}
		idx = sample(recs, idx, *sel.Sample, sel.Seed)
	}
	if sel.Shard != nil {
		var out []int
		for _, i := range idx {
			if i%sel.Shard.N == sel.Shard.I-1 {
				out = append(out, i)
			}
		}
		idx = out
	}
	slices.Sort(idx)
	return idx, nil
}

// sample draws n of idx stratified by lesion × path with proportional
// integer allocation (largest remainders, ties in stratum order) and the
// seeded RNG of §2.3.
func sample(recs []*benchmark.Record, idx []int, n int, seed uint64) []int {
	total := len(idx)
	if n >= total {
		return slices.Clone(idx)
	}
	strata := map[string][]int{}
	for _, i := range idx {
		name := recs[i].Lesion + "|" + string(recs[i].Path())
		strata[name] = append(strata[name], i)
	}
	names := make([]string, 0, len(strata))
	for k := range strata {
		names = append(names, k)
	}
	slices.Sort(names) // byte order
	sizes := make([]int, len(names))
	for j, name := range names {
		sizes[j] = len(strata[name])
	}
	alloc := allocate(sizes, n)
	r := rng.New("chexpercept/eval-sample/" + strconv.FormatUint(seed, 10))
	var out []int
	for j, name := range names {
		out = append(out, rng.Sample(r, strata[name], alloc[j])...)
	}
	slices.Sort(out)
	return out
}

// allocate splits n slots over strata of the given sizes (in stratum
// order): stratum s gets n·size div T, and the remaining slots go one
// each to the largest n·size mod T, ties in stratum order (§2.3).
func allocate(sizes []int, n int) []int {
	total := 0
	for _, s := range sizes {
		total += s
	}
	alloc := make([]int, len(sizes))
	if total == 0 {
		return alloc
	}
	rem := make([]int, len(sizes))
	given := 0
	for j, s := range sizes {
		alloc[j], rem[j] = n*s/total, n*s%total
		given += alloc[j]
	}
	order := make([]int, len(sizes))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return rem[b] - rem[a] })
	for k := 0; k < n-given && k < len(order); k++ {
		alloc[order[k]]++
	}
	return alloc
}
