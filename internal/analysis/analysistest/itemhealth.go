package analysistest

import (
	"github.com/chexpercept/chexpercept/internal/benchmark"
	"github.com/chexpercept/chexpercept/internal/protocol"
)

// PlantMislabel swaps the comparison ground truth (T9) of the first
// lung-type positive record of recs to another option, as a labelling
// error would, and returns its key and a policy that answers every turn
// with the ground truth except that one, which it answers with the true
// (original) label: the answers of good models on a mislabeled item.
func PlantMislabel(recs []*benchmark.Record) (key string, truth Policy) {
	for _, r := range recs {
		if r.Attributes == nil {
			continue
		}
		c := &r.Attributes.Comparison
		orig := c.AnswerIndex
		c.AnswerIndex = orig%len(c.AnswerOptions) + 1
		c.Answer = c.AnswerOptions[c.AnswerIndex-1]
		key = r.KeyID
		reply := answer([]int{orig})
		return key, func(rec *benchmark.Record, t protocol.PlannedTurn) string {
			if rec.KeyID == key && t.Q == benchmark.QComparison {
				return reply
			}
			return Oracle(rec, t)
		}
	}
	return "", nil
}
