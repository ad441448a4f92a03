package bench

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lib/pq"
)

// ledgerRows counts the rows of every table in the ledger database at url
// (the run's own database, so a difference of two counts is what the run
// wrote, net of deletes).
func ledgerRows(ctx context.Context, url string) (map[string]int64, error) {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, t := range tables {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+pq.QuoteIdentifier(t)).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		out[t] = n
	}
	return out, nil
}

// rowsWritten is after − before per table (tables with no change left out)
// and their sum.
func rowsWritten(before, after map[string]int64) (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	for t, n := range after {
		if d := n - before[t]; d != 0 {
			out[t] = d
			total += d
		}
	}
	return out, total
}
