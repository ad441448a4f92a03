package ledger

import "time"

// SetMigrationLockWait sets how long Migrate waits for the migration lock,
// for the test's length; it returns the restore.
func SetMigrationLockWait(d time.Duration) (restore func()) {
	old := migrationLockWait
	migrationLockWait = d
	return func() { migrationLockWait = old }
}

// MigrationLockKey is the advisory lock Migrate takes.
const MigrationLockKey = migrationLockKey
