package review

import (
	"context"
	"slices"

	"golang.org/x/sync/errgroup"
)

// prebuildWorkers bounds the images Prebuild builds at once (each holds
// a decoded radiograph), as the cache bounds the builds of requests.
const prebuildWorkers = imageBuilds

// prebuildShare is the part of the image cache Prebuild fills: the rest
// stays for the images reviewers open beyond it, and a prebuilt image is
// never pushed out by another prebuilt one.
const prebuildShare = 3 // of 4

// Prebuild builds the cases' images into the server's cache before
// reviewers ask for them, so that the first reviewer to open a case does
// not wait for its radiograph to be decoded, framed and encoded. Cases
// come in the order reviewers meet them: every reviewer's first case,
// then every reviewer's second, and so on (a case shared by reviewers
// counts at its earliest place). It stops when the cache is three
// quarters full, when ctx ends, or after the last case; an image that
// cannot be built is left for its request to report. The serve command
// runs it before it listens: its time is bounded by the memory it fills
// (about 70 radiographs).
func (srv *Server) Prebuild(ctx context.Context) error {
	if srv.store.ReadOnly() {
		return nil // only the admin signs in: no queue to prepare
	}
	cases, err := srv.store.casesInQueueOrder(ctx)
	if err != nil {
		return err
	}
	limit := imageCacheBytes * prebuildShare / 4
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(prebuildWorkers)
	for _, c := range cases {
		for _, kind := range []string{"cxr.png", "mask.png", "contour.png"} {
			if kind != "cxr.png" && !c.Positive() {
				continue
			}
			if held, _, _, _ := srv.images.Stats(); held >= int64(limit) || gctx.Err() != nil {
				return g.Wait()
			}
			g.Go(func() error {
				// An error is the request's to report, with its status.
				_, _ = srv.imageBytes(gctx, c, kind, imageKey(c, kind))
				return nil
			})
		}
	}
	return g.Wait()
}

// casesInQueueOrder lists the assigned cases by their earliest place in
// any reviewer's queue (queues are in source order), then by id.
func (s *Store) casesInQueueOrder(ctx context.Context) ([]*CaseInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+caseCols+`, q.place FROM cases c JOIN (
		SELECT case_id, MIN(place) AS place FROM (
			SELECT case_id, ROW_NUMBER() OVER (PARTITION BY reviewer_id ORDER BY case_id) AS place FROM assignments)
		GROUP BY case_id) q ON q.case_id = c.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type placed struct {
		c     *CaseInfo
		place int64
	}
	var out []placed
	for rows.Next() {
		var p placed
		c, err := scanCase(placeScanner{rows, &p.place})
		if err != nil {
			return nil, err
		}
		p.c = c
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b placed) int {
		if a.place != b.place {
			return int(a.place - b.place)
		}
		return int(a.c.ID - b.c.ID)
	})
	cs := make([]*CaseInfo, len(out))
	for i, p := range out {
		cs[i] = p.c
	}
	return cs, nil
}

// placeScanner scans a case row followed by one more column.
type placeScanner struct {
	sc    scanner
	place *int64
}

func (p placeScanner) Scan(dest ...any) error { return p.sc.Scan(append(dest, p.place)...) }
