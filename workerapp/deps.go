// Package workerapp is the worker's body, separate from its main so tests
// can run real workers in-process: it registers every workflow and activity
// and runs until its context ends.
package workerapp

import (
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Deps are what activities are built from.
type Deps struct {
	Ledger *ledger.Store
	Fleet  fleet.Endpoints
	// HTTP is the client every fleet API client shares (timeouts set by the caller).
	HTTP *http.Client
	Log  zerolog.Logger
	// Identity names this worker (host:pid) in the ledger's event log.
	Identity string
	// Temporal is the worker's own client (set by Run), for activities that
	// must ask Temporal about other workflows.
	Temporal client.Client
	// Keyring is who may sign starts and approvals (nil or unconfigured:
	// unsigned approvals are accepted at default gates and recorded as
	// "unsigned"; README, "Approvals").
	Keyring *approval.Keyring
	// ApprovalMinimum is the least approval policy of this worker's gates
	// (--approval-require-signed-start, --approval-min-approvers,
	// --approval-gated-kinds): a plan may ask for more, never for less.
	ApprovalMinimum approval.Minimum
	// ArtifactRoot is the only directory a plan's path: artifacts are
	// read from (empty: none are).
	ArtifactRoot string
	// HealthCheckHosts are the hosts a rollout's HTTP health checks may
	// ask (none: no HTTP check runs).
	HealthCheckHosts []string
	// Webhooks are the notification receivers plans may name.
	Webhooks []rollout.Webhook
	// Phase2UploadStall shortens a host flash's phase 2 upload stall
	// timeout (zero: the product's, fleet.RequestTimeout). Only tests set
	// it, to drive a stalled upload and its retry in seconds.
	Phase2UploadStall time.Duration
	// AgentReportWait and AgentSelfUpdateWait shorten how long an agent
	// install waits for the server to show its image after the task ended
	// and for a new cn-agent (zero: the product's, in
	// kinds/agents/activities_confirm.go). Only tests set them.
	AgentReportWait, AgentSelfUpdateWait time.Duration
}
