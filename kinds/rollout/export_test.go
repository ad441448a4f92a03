package rollout

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/kinds"
)

// Test hooks for the external test package (kinds_test), whose
// integration tests use the real stack.
var (
	TestUpdate  = testUpdate
	KindTest    = kindTest
	TestUpdates = updates
)

type TestInput = testInput

// MaxRefusedApprovals is how many approvals a run refuses before it
// accepts no more.
const MaxRefusedApprovals = maxRefusedApprovals

// SetTestDeviceTime sets the test kind's catalogue time (what a window
// check assumes an update takes) until the test ends.
func SetTestDeviceTime(t interface{ Cleanup(func()) }, d time.Duration) {
	info := kinds.Kinds[kindTest]
	before := info.DeviceTime
	info.DeviceTime = d
	kinds.Kinds[kindTest] = info
	t.Cleanup(func() {
		info.DeviceTime = before
		kinds.Kinds[kindTest] = info
	})
}

// SetFreshDataTimeout shortens a's wait for data scraped after a batch, so
// a test sees a round that never gets fresh data without waiting 90 s.
func SetFreshDataTimeout(a *HealthActivities, d time.Duration) { a.freshWait = d }

// PinTestKind gives the test kind a versioning behaviour until the test
// ends, so that a workerapp worker (which registers every kind with its
// behaviour) can run beside it.
func PinTestKind(t interface{ Cleanup(func()) }) {
	info := kinds.Kinds[kindTest]
	before := info.Behavior
	info.Behavior = workflow.VersioningBehaviorPinned
	kinds.Kinds[kindTest] = info
	t.Cleanup(func() {
		info.Behavior = before
		kinds.Kinds[kindTest] = info
	})
}
