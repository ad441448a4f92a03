package mgsupdate

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// A switch or power shelf SP has no row in Nexus's sled table, the only
// place a worker reads a rack from: with a {rack} lockstep endpoint its
// owner is unknown, and the error says which endpoint such SPs need. No
// request is made (the endpoint is not listening).
func TestSwitchAndPowerShelfSPsNeedASingleRackLockstepEndpoint(t *testing.T) {
	o := ownerLookup{url: "http://127.0.0.1:1/nexus/{rack}", http: http.DefaultClient}
	for _, typ := range []mgs.SpType{mgs.SpTypeSwitch, mgs.SpTypePower} {
		_, err := o.pendingUpdate(context.Background(), mgs.SpIdentifier{Type: typ, Slot: 0}, "SW0", "913-0000006")
		var app *temporal.ApplicationError
		require.True(t, errors.As(err, &app), "%s: %v", typ, err)
		assert.Equal(t, failure.OwnerUnknown, app.Type(), "%s", typ)
		assert.Contains(t, app.Error(), "need a single-rack lockstep endpoint (no {rack})", "%s", typ)
	}
	_, err := o.pendingUpdate(context.Background(), mgs.SpIdentifier{Type: mgs.SpTypeSled, Slot: 0}, "S0", "913-0000019")
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, failure.NexusDBNotConfigured, app.Type(), "a sled's rack comes from the sled table")
}
