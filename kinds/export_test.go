package kinds

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Test hooks for the external test package (kinds_test), whose
// integration tests use the real stack.
var (
	TestUpdate  = testUpdate
	KindTest    = kindTest
	TestUpdates = updates
)

type TestInput = testInput

// SetTestDeviceTime sets the test kind's catalogue time (what a window
// check assumes an update takes) until the test ends.
func SetTestDeviceTime(t interface{ Cleanup(func()) }, d time.Duration) {
	info := Kinds[kindTest]
	before := info.DeviceTime
	info.DeviceTime = d
	Kinds[kindTest] = info
	t.Cleanup(func() {
		info.DeviceTime = before
		Kinds[kindTest] = info
	})
}

// PinTestKind gives the test kind a versioning behaviour until the test
// ends, so that a workerapp worker (which registers every kind with its
// behaviour) can run beside it.
func PinTestKind(t interface{ Cleanup(func()) }) {
	info := Kinds[kindTest]
	before := info.Behavior
	info.Behavior = workflow.VersioningBehaviorPinned
	Kinds[kindTest] = info
	t.Cleanup(func() {
		info.Behavior = before
		Kinds[kindTest] = info
	})
}
