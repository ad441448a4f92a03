package mgsupdate

import "go.temporal.io/sdk/workflow"

// checkZoneSafety waits, up to the timing's ZoneSafetyWait, until the
// sled holds no zone that is unsafe to shut down (HostZoneSafety), else
// the update refuses (ZoneUnsafeToShutdown). It runs before anything is
// written to the sled, as omicron's planner plans no host update of such
// a sled, and again just before the reboot: meanwhile another sled's
// reboot may have taken down a zone of the same kind.
func (w *hostFlash) checkZoneSafety(ctx workflow.Context, when string) error {
	in := ZoneSafetyInput{Serial: w.serial, SledID: w.in.SledID,
		Deadline: workflow.Now(ctx).Add(w.timing.ZoneSafetyWait), PollInterval: w.timing.PollInterval}
	return workflow.ExecuteActivity(w.longOpts(ctx, w.timing.ZoneSafetyWait, "wait until the sled's zones are safe to shut down ("+when+")"),
		mgsActs.HostZoneSafety, in).Get(ctx, nil)
}
