package activities

import "time"

// SetFreshDataTimeout shortens a's wait for data scraped after a batch, so
// a test sees a round that never gets fresh data without waiting 90 s.
func SetFreshDataTimeout(a *HealthActivities, d time.Duration) { a.freshWait = d }
