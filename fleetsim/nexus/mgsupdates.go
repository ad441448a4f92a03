package nexus

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// mgsPostUpdateDelay is how long after a delivery completes Nexus's driver
// resets the SP: it notices completion at its next status poll (every 3 s,
// omicron nexus/mgs-updates driver_update.rs).
const mgsPostUpdateDelay = 3 * time.Second

// MGSUpdate is one attempt of Nexus's MGS update driver.
type MGSUpdate struct {
	Serial   string    `json:"serial"`
	Slot     uint16    `json:"slot"`
	Version  string    `json:"version"`
	UpdateID uuid.UUID `json:"update_id,omitempty"`
	// Outcome: started, precheck_failed, refused (by the SP).
	Outcome string    `json:"outcome"`
	Note    string    `json:"note,omitempty"`
	At      time.Time `json:"at"`
}

// driveMGSUpdates is one pass of Nexus's MGS update driver over the target's
// pending updates: an SP update whose precheck passes (active and inactive
// slots as expected) is started through the rack's MGS, and the SP is reset
// once it completes. A device busy with any update is left alone this pass;
// components other than the SP are not simulated (DEVIATIONS.md).
func (r *rack) driveMGSUpdates(bp *Blueprint) {
	for _, u := range bp.PendingMGSUpdates.ByBaseboard {
		var det spDetails
		if err := json.Unmarshal(u.Details, &det); err != nil || det.Component != "sp" {
			continue
		}
		fw, err := r.d.mgs.ReadSPFirmware(r.index, u.SpType, int(u.SlotID))
		if err != nil || fw.Down || fw.Busy != nil || fw.Active == u.ArtifactVersion {
			continue
		}
		rec := MGSUpdate{Serial: u.BaseboardID.SerialNumber, Slot: u.SlotID, Version: u.ArtifactVersion, At: time.Now().UTC()}
		switch {
		case fw.Active != det.ExpectedActiveVersion:
			rec.Outcome, rec.Note = "precheck_failed", fmt.Sprintf("active version %q, expected %q", fw.Active, det.ExpectedActiveVersion)
		case !det.ExpectedInactiveVersion.matches(fw.Inactive):
			rec.Outcome, rec.Note = "precheck_failed", fmt.Sprintf("inactive version %q, expected %+v", fw.Inactive, det.ExpectedInactiveVersion)
		default:
			id, err := r.d.mgs.StartOwnerSPUpdate(r.index, u.SpType, int(u.SlotID), u.ArtifactVersion, u.ArtifactHash,
				"Nexus", r.d.env.Scale(mgsPostUpdateDelay))
			if err != nil {
				rec.Outcome, rec.Note = "refused", err.Error()
			} else {
				rec.Outcome, rec.UpdateID = "started", id
			}
		}
		r.mu.Lock()
		if n := len(r.updates); n == 0 || !sameAttempt(r.updates[n-1], rec) {
			r.updates = append(r.updates, rec)
		}
		r.mu.Unlock()
	}
}

// sameAttempt: a precheck failure or refusal repeated every pass is recorded once.
func sameAttempt(a, b MGSUpdate) bool {
	return a.Outcome != "started" && a.Outcome == b.Outcome && a.Serial == b.Serial && a.Note == b.Note
}

// mgsUpdateDone reports whether the device of u runs its artifact (the
// planner then drops the pending update).
func (r *rack) mgsUpdateDone(u PendingMGSUpdate) bool {
	var det spDetails
	if err := json.Unmarshal(u.Details, &det); err != nil || det.Component != "sp" {
		return false
	}
	fw, err := r.d.mgs.ReadSPFirmware(r.index, u.SpType, int(u.SlotID))
	return err == nil && !fw.Down && fw.Busy == nil && fw.Active == u.ArtifactVersion
}
