package rollout

import (
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// RolloutActivities record what operators decide during a rollout, and
// wait for the updates a reset rollout adopts.
type RolloutActivities struct {
	Store    *ledger.Store
	Temporal client.Client
}
