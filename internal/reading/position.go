package reading

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
)

// position is a reader's place kept between requests in an unaided
// study, so that a page, its images and an answer cost no replay of the
// record's conversation: the database is read once (the first request
// after the server starts) and the place then moves with each stored
// answer, by one replay of the current record only. The database stays
// the authority: any failed or refused write drops the kept place, and
// the next request reads it again.
type position struct {
	mu      sync.Mutex
	items   []Item
	cur     *current // nil: read it from the database
	answers []Answer // the answered turns of cur's record
	// shownMS is when this server first showed cur's pending turn
	// (0: not yet); the answer stores it as the turn's display time.
	shownMS int64
}

// positionOf returns the reader's kept place (empty the first time).
func (srv *Server) positionOf(readerID int64) *position {
	v, _ := srv.positions.LoadOrStore(readerID, &position{})
	return v.(*position)
}

// cached reports whether readers' places are kept: not in an aided
// study, whose two-step answers read and write the database as before.
func (srv *Server) cached() bool { return srv.study != nil && srv.study.Aid == nil }

// load returns the reader's current place, reading it from the database
// when it is not kept. p.mu is held.
func (p *position) load(ctx context.Context, srv *Server, readerID int64) (*current, error) {
	if p.cur != nil {
		return p.cur, nil
	}
	if p.items == nil {
		items, err := srv.store.Items(ctx, readerID)
		if err != nil {
			return nil, err
		}
		p.items = items
	}
	cur, ans, err := srv.locateIn(ctx, readerID, p.items)
	if err != nil {
		return nil, err
	}
	p.cur, p.answers, p.shownMS = cur, nil, 0
	for _, a := range ans {
		switch {
		case a.Text != "":
			p.answers = append(p.answers, a)
		case cur.pending != nil && a.Seq == cur.pending.Seq:
			p.shownMS = a.ShownMS // shown by an earlier server
		}
	}
	return cur, nil
}

// advance moves the kept place past the answer just stored for the
// pending turn: the rest of the record is replayed from its answers, and
// at its end the next record with a turn to answer is found. On an error
// the place is dropped (read again from the database next time). p.mu is
// held and p.cur is the place the answer was given at.
func (p *position) advance(ctx context.Context, srv *Server, a Answer) {
	cur := p.cur
	ans := append(p.answers[:len(p.answers):len(p.answers)], a)
	p.cur, p.answers, p.shownMS = nil, nil, 0
	for pos := cur.pos; pos < len(p.items); pos++ {
		it := p.items[pos]
		rec, err := itemRecord(srv.bench, it)
		if err != nil {
			return
		}
		if pos != cur.pos {
			ans = nil
		}
		_, pend, err := Replay(ctx, rec, it.BenchIndex, srv.bench.Dir, srv.oracle, ans)
		if err != nil {
			return
		}
		if pend != nil {
			p.cur, p.answers = &current{pos: pos, total: len(p.items), item: it, rec: rec, pending: pend}, ans
			return
		}
	}
	p.cur = &current{pos: len(p.items), total: len(p.items)}
}

// imageTag is the ETag of an image of a reader: a digest of the study,
// the reader and the image's place (record, turn, image), nothing of what
// the image shows, so the tags of a turn's candidates tell nothing of
// which is the answer. It differs between studies and readers, as the
// image at one URL does.
func (srv *Server) imageTag(readerID int64, pos, seq, i int) string {
	h := sha256.New()
	fmt.Fprintf(h, "chexpercept reading image\x00%s\x00%s\x00%s\x00%d/%d/%d/%d", srv.study.BenchSHA256, srv.study.CreatedAt, srv.study.Name, readerID, pos, seq, i)
	return hex.EncodeToString(h.Sum(nil)[:12])
}
