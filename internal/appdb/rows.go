package appdb

import (
	"context"
	"database/sql"
)

// Querier is what Rows queries: a DB or a transaction (*sql.Tx).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Rows runs query and returns one T per row, in the query's order: dest
// gives, for the T being filled, the destinations of the row's columns.
func Rows[T any](ctx context.Context, q Querier, dest func(*T) []any, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(dest(&v)...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
