package kinds

// Test hooks for the external test package (kinds_test), whose
// integration tests use the real stack.
var (
	TestUpdate  = testUpdate
	KindTest    = kindTest
	TestUpdates = updates
)

type TestInput = testInput
