package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// Measured is a kind's measured change time: the median duration of its
// recent completed attempts, and how many that is.
type Measured struct {
	Median  time.Duration `json:"median"`
	Samples int           `json:"samples"`
}

// MeasuredDurations are, per kind, the median duration (intent to end) of
// the last `last` completed attempts that changed something (an attempt
// that found nothing to do says nothing of how long a change takes).
// Kinds with no such attempt are absent.
func (s *Store) MeasuredDurations(ctx context.Context, kinds []string, last int) (map[string]Measured, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT kind, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds), count(*)
		FROM (SELECT kind, extract(epoch FROM finished_at - created_at) AS seconds,
		             row_number() OVER (PARTITION BY kind ORDER BY finished_at DESC) AS n
		      FROM update_attempt
		      WHERE state = 'completed' AND finished_at IS NOT NULL AND kind = ANY($1)
		        AND outcome NOT IN ('FoundNoChangesNeeded', 'NothingSelected')) recent
		WHERE n <= $2
		GROUP BY kind`, pq.Array(kinds), last)
	if err != nil {
		return nil, fmt.Errorf("ledger: measured durations: %w", err)
	}
	defer rows.Close()
	out := map[string]Measured{}
	for rows.Next() {
		var kind string
		var seconds float64
		var n int
		if err := rows.Scan(&kind, &seconds, &n); err != nil {
			return nil, fmt.Errorf("ledger: measured durations: %w", err)
		}
		out[kind] = Measured{Median: time.Duration(seconds * float64(time.Second)).Round(time.Millisecond), Samples: n}
	}
	return out, rows.Err()
}
