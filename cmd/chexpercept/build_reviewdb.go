package main

import (
	"github.com/chexpercept/chexpercept/internal/review"
)

// openReviewDB resolves decisions from the review app's database with the
// same rule as reviews.jsonl (build.md §4).
func openReviewDB(path string) (review.Decisions, error) {
	l, err := review.OpenDecisions(path)
	if err != nil {
		return nil, err
	}
	return l, nil
}
