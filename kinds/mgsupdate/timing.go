package mgsupdate

import (
	"fmt"
	"time"
)

// MGSTiming paces and bounds an MGS update (zero = default). The defaults
// are the real devices' and omicron's driver's (docs/CONFORMANCE.md §B); tests
// against a sped-up fleetsim shrink them.
type MGSTiming struct {
	// PollInterval paces status polls (default: defaultPollInterval).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// ProgressTimeout: an update whose progress does not change for this
	// long is stuck: aborted, and a new attempt starts (default:
	// defaultProgressTimeout).
	ProgressTimeout time.Duration `json:"progressTimeout,omitempty"`
	// TakeoverTimeout: someone else's complete update that nobody resets
	// within this is taken over (default: defaultTakeoverTimeout).
	TakeoverTimeout time.Duration `json:"takeoverTimeout,omitempty"`
	// ResetRetryInterval: after a reset whose reply was lost, wait this
	// long, re-check, then reset again if needed (default:
	// defaultResetRetryInterval).
	ResetRetryInterval time.Duration `json:"resetRetryInterval,omitempty"`
	// NewVersionTimeout bounds the wait for the new version after a reset
	// (default: spNewVersionTimeout, switchNewVersionTimeout on a switch)
	// or for the host's boot (hostBootTimeout).
	NewVersionTimeout time.Duration `json:"newVersionTimeout,omitempty"`
	// AttemptDelay is the pause before a new attempt (default: defaultAttemptDelay).
	AttemptDelay time.Duration `json:"attemptDelay,omitempty"`
	// MaxAttempts bounds the attempts (default: defaultMaxAttempts).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// CheckpointEvery: a long wait reports progress to the workflow this
	// often (default: defaultCheckpointEvery; at most maxCheckpoints per
	// wait).
	CheckpointEvery time.Duration `json:"checkpointEvery,omitempty"`
	// HeartbeatTimeout: how soon a dead worker's device step is retried
	// elsewhere (default: defaultHeartbeatTimeout).
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
	// ZoneSafetyWait: a host is rebooted only when its sled holds no zone
	// that is unsafe to shut down; the update waits this long for that,
	// then refuses (default: defaultZoneSafetyWait).
	ZoneSafetyWait time.Duration `json:"zoneSafetyWait,omitempty"`
}

// The default timings, each with the reason for its value.
const (
	// defaultPollInterval is omicron's STATUS_POLL_INTERVAL: an update's
	// status changes within seconds, and each poll costs MGS a message to
	// the SP.
	defaultPollInterval = 3 * time.Second
	// defaultProgressTimeout is omicron's PROGRESS_TIMEOUT: an upload
	// rarely pauses for more than seconds, so only a pathological stall
	// (MGS gone mid-upload) trips it; generous, because tripping it in a
	// working system costs a whole attempt.
	defaultProgressTimeout = 600 * time.Second
	// defaultTakeoverTimeout: a complete update that nobody activates
	// within the same 600 s has lost whoever drove it (omicron waits
	// PROGRESS_TIMEOUT before it resets someone else's update).
	defaultTakeoverTimeout = 600 * time.Second
	// defaultResetRetryInterval is omicron's RESET_DELAY_INTERVAL: after a
	// lost reset reply the SP gets this long to come back before it is
	// checked, and reset again only if the reset did not happen.
	defaultResetRetryInterval = 10 * time.Second
	// defaultAttemptDelay is the pause between attempts of omicron's
	// driver: what failed the attempt (an SP reset mid-delivery, an MGS
	// restarting) has time to settle.
	defaultAttemptDelay = 60 * time.Second
	// defaultMaxAttempts: five attempts 60 s apart ride out a few minutes
	// of trouble; a device that fails five times needs an operator.
	defaultMaxAttempts = 5
	// defaultCheckpointEvery: the progress query moves at least once a
	// minute during a long wait, at the cost of at most maxCheckpoints
	// history events per wait.
	defaultCheckpointEvery = 60 * time.Second
	// defaultHeartbeatTimeout: the device steps heartbeat at every poll
	// (3 s), and while one MGS request takes up to fleet.RequestTimeout
	// the worker beats for them (workerapp/keepalive.go); a worker
	// silent for 30 s is dead, and its step moves to another worker.
	defaultHeartbeatTimeout = 30 * time.Second
	// defaultZoneSafetyWait: what makes a zone unsafe to shut down is
	// usually another zone of its kind briefly down (a neighbour's reboot,
	// a DNS server catching up); CockroachDB re-replicates a dead node's
	// ranges once server.time_until_store_dead (5 min by default) passes.
	// Ten minutes rides that out; longer, and a rollout's batch would sit
	// on a rack that needs an operator, so the update refuses instead.
	defaultZoneSafetyWait = 10 * time.Minute
)

// After the post-update, the new version must show within (omicron's
// post_update_timeout; docs/CONFORMANCE.md §B):
const (
	// spNewVersionTimeout: a sled's or power shelf's SP resets in seconds.
	spNewVersionTimeout = 60 * time.Second
	// switchNewVersionTimeout: a switch's SP has been seen to take 10–20 s.
	switchNewVersionTimeout = 120 * time.Second
	// hostBootTimeout: a host's reset takes minutes (mostly DRAM
	// training), then it fetches phase 2 through the SP.
	hostBootTimeout = 30 * time.Minute
)

// maxCheckpoints bounds the progress checkpoints of one wait, so a long
// delivery costs a handful of history events at most.
const maxCheckpoints = 4

func (t MGSTiming) withDefaults(newVersion time.Duration) MGSTiming {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.PollInterval, defaultPollInterval)
	def(&t.ProgressTimeout, defaultProgressTimeout)
	def(&t.TakeoverTimeout, defaultTakeoverTimeout)
	def(&t.ResetRetryInterval, defaultResetRetryInterval)
	def(&t.NewVersionTimeout, newVersion)
	def(&t.AttemptDelay, defaultAttemptDelay)
	def(&t.CheckpointEvery, defaultCheckpointEvery)
	def(&t.HeartbeatTimeout, defaultHeartbeatTimeout)
	def(&t.ZoneSafetyWait, defaultZoneSafetyWait)
	if t.MaxAttempts <= 0 {
		t.MaxAttempts = defaultMaxAttempts
	}
	return t
}

func (t MGSTiming) validate(what string) error {
	for _, d := range []time.Duration{t.PollInterval, t.ProgressTimeout, t.TakeoverTimeout, t.ResetRetryInterval,
		t.NewVersionTimeout, t.AttemptDelay, t.CheckpointEvery, t.HeartbeatTimeout, t.ZoneSafetyWait} {
		if d < 0 {
			return fmt.Errorf("%s: timings must not be negative", what)
		}
	}
	if t.MaxAttempts < 0 {
		return fmt.Errorf("%s: maxAttempts must not be negative", what)
	}
	return nil
}
