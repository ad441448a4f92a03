package rollout

import (
	"context"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// measuredWindow is how many recent changes of a kind its measured time
// is the median of: recent enough to follow the fleet, enough to ignore
// one slow device.
const measuredWindow = 50

// minMeasured is how many recent changes a measured time needs before a
// dry run trusts it over the kind's typical time.
const minMeasured = 3

// MeasuredDeviceTimes are the kinds' measured change times from the
// ledger (absent: none measured yet), for a dry run's estimate.
func (a *RolloutActivities) MeasuredDeviceTimes(ctx context.Context, kinds []string) (map[string]ledger.Measured, error) {
	return a.Store.MeasuredDurations(ctx, kinds, measuredWindow)
}
