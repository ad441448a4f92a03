package kinds

import "time"

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
