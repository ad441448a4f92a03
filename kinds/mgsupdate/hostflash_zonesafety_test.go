package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
)

func zoneUnsafe(context.Context, ZoneSafetyInput) error {
	return temporal.NewNonRetryableApplicationError("internal_dns zone: only 1/1 internal DNS zones are synchronized; require at least 3",
		failure.ZoneUnsafeToShutdown, nil)
}

// A sled holding a zone that is unsafe to shut down: the update refuses
// before anything is written to it.
func TestHostFlashUnsafeZoneTouchesNothing(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostZoneSafety", zoneUnsafe)
	_, err := m.runHost(hostInput())
	assert.Equal(t, failure.ZoneUnsafeToShutdown, appErrType(err))
	assert.Empty(t, m.phase2s)
	assert.Empty(t, m.starts)
	assert.Empty(t, m.hostBoots, "the host is not rebooted")
}

// A zone that became unsafe while the images were written: the host is
// still not rebooted, and the update fails saying why.
func TestHostFlashUnsafeZoneBeforeTheRebootDoesNotReboot(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostZoneSafety", func(context.Context, ZoneSafetyInput) error { return nil }, zoneUnsafe)
	_, err := m.runHost(hostInput())
	assert.Equal(t, failure.ZoneUnsafeToShutdown, appErrType(err))
	assert.Len(t, m.starts, 1, "phase 1 was written to the inactive slot")
	assert.Empty(t, m.hostBoots, "the host is not rebooted")
	assert.Equal(t, 2, m.count("HostZoneSafety"))
	assert.Equal(t, ledger.StateFailed, m.lastFinish().State)
}
