package appdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRows(t *testing.T) {
	c, err := Create(nil, filepath.Join(t.TempDir(), "rows.sqlite"), testSpec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pairs (n INTEGER NOT NULL, s TEXT);
INSERT INTO pairs VALUES (2, 'two'), (1, 'one'), (3, NULL);`, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	db := c.DB()
	type pair struct {
		N int
		S string
	}
	dest := func(p *pair) []any { return []any{&p.N, &p.S} }
	ctx := context.Background()
	for _, tc := range []struct {
		name, query string
		args        []any
		want        []pair
		err         string
	}{
		{"in the query's order", `SELECT n, s FROM pairs WHERE s IS NOT NULL ORDER BY n`, nil, []pair{{1, "one"}, {2, "two"}}, ""},
		{"with arguments", `SELECT n, s FROM pairs WHERE n = ?`, []any{2}, []pair{{2, "two"}}, ""},
		{"no row", `SELECT n, s FROM pairs WHERE n > 9`, nil, nil, ""},
		{"a column that does not scan", `SELECT n, s FROM pairs WHERE n = 3`, nil, nil, "converting NULL to string"},
		{"a bad query", `SELECT missing FROM pairs`, nil, nil, "no such column"},
	} {
		got, err := Rows(ctx, db, dest, tc.query, tc.args...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%s: %v, %v", tc.name, got, err)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: row %d = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}
