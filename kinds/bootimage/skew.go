package bootimage

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/internal/version"
)

// Boot image skew enforcement: is the boot image the cluster's new machines
// start from close enough to the release? Release versions (x.y.z) are
// compared, never OS build strings; RHCOS versions by major.minor; a RHEL
// major mismatch is never acceptable.

// Skew enforcement modes.
const (
	SkewAutomatic = "Automatic" // the recorded boot image version (set by clean bumps)
	SkewManual    = "Manual"    // the version the operator states
	SkewNone      = "None"      // no check, never blocks
)

// Upgradeable condition reasons.
const (
	ReasonSkewOK           = "AsExpected"
	ReasonSkewDisabled     = "BootImageSkewEnforcementDisabled"
	ReasonSkewError        = "ClusterBootImageSkewError"
	ReasonSkewRHELMismatch = "ClusterBootImageRHELMajorMismatch"
	ReasonSkewUnknown      = "ClusterBootImageVersionUnknown"
)

// SkewCheck is what the skew verdict is computed from.
type SkewCheck struct {
	Mode string `json:"mode"`
	// BootOCPVersion / BootRHCOSVersion: the cluster's boot image version
	// (the record in Automatic mode, the stated one in Manual mode).
	BootOCPVersion   string `json:"bootOCPVersion,omitempty"`
	BootRHCOSVersion string `json:"bootRHCOSVersion,omitempty"`
	// The release's limit and OS.
	LimitOCPVersion   string `json:"limitOCPVersion,omitempty"`
	LimitRHCOSVersion string `json:"limitRHCOSVersion,omitempty"`
	Release           string `json:"release"`
	ReleaseOSVersion  string `json:"releaseOSVersion,omitempty"`
}

// SkewVerdict is the outcome.
type SkewVerdict struct {
	Checked     bool   `json:"checked"`
	Upgradeable bool   `json:"upgradeable"`
	Reason      string `json:"reason"`
	Message     string `json:"message,omitempty"`
}

// EvaluateSkew applies the skew rules.
func EvaluateSkew(c SkewCheck) SkewVerdict {
	if c.Mode == SkewNone {
		return SkewVerdict{Upgradeable: true, Reason: ReasonSkewDisabled, Message: "boot image skew enforcement is None: not checked"}
	}
	v := SkewVerdict{Checked: true, Upgradeable: true, Reason: ReasonSkewOK}
	hint := "update the boot images of every MachineSet (a bump records the new version only when none was skipped or failed)"
	if c.Mode == SkewManual {
		hint = "update the boot images and state the new version in Manual mode"
	}
	// RHEL majors are never cross-compatible.
	if c.BootRHCOSVersion != "" && c.ReleaseOSVersion != "" {
		bm, err1 := rhcosRHELMajor(c.BootRHCOSVersion)
		rm, err2 := rhcosRHELMajor(c.ReleaseOSVersion)
		if err1 == nil && err2 == nil && bm != rm {
			return SkewVerdict{Checked: true, Reason: ReasonSkewRHELMismatch,
				Message: fmt.Sprintf("boot image RHCOS %s is RHEL %d but release %s runs RHEL %d; %s", c.BootRHCOSVersion, bm, c.Release, rm, hint)}
		}
	}
	compared := false
	if c.BootOCPVersion != "" && c.LimitOCPVersion != "" {
		cmp, err := version.CompareStrict(c.BootOCPVersion, c.LimitOCPVersion, version.Release)
		if err != nil {
			return SkewVerdict{Checked: true, Reason: ReasonSkewUnknown, Message: err.Error() + "; " + hint}
		}
		compared = true
		if cmp < 0 {
			return SkewVerdict{Checked: true, Reason: ReasonSkewError,
				Message: fmt.Sprintf("boot image version %s is older than %s, the oldest release %s accepts; %s", c.BootOCPVersion, c.LimitOCPVersion, c.Release, hint)}
		}
	}
	if !compared && c.BootRHCOSVersion != "" && c.LimitRHCOSVersion != "" {
		cmp, err := version.CompareStrict(c.BootRHCOSVersion, c.LimitRHCOSVersion, version.RHCOS)
		if err != nil {
			return SkewVerdict{Checked: true, Reason: ReasonSkewUnknown, Message: err.Error() + "; " + hint}
		}
		compared = true
		if cmp < 0 {
			return SkewVerdict{Checked: true, Reason: ReasonSkewError,
				Message: fmt.Sprintf("boot image RHCOS %s is older than %s, the oldest RHCOS release %s accepts; %s", c.BootRHCOSVersion, c.LimitRHCOSVersion, c.Release, hint)}
		}
	}
	if !compared {
		if c.LimitOCPVersion == "" && c.LimitRHCOSVersion == "" {
			v.Message = "release " + c.Release + " states no boot image skew limit"
			return v
		}
		return SkewVerdict{Checked: true, Reason: ReasonSkewUnknown,
			Message: "the cluster's boot image version is unknown; " + hint}
	}
	v.Message = fmt.Sprintf("boot image version %s is within the skew limit of release %s", skewFirstNonEmpty(c.BootOCPVersion, c.BootRHCOSVersion), c.Release)
	return v
}

func skewFirstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func rhcosRHELMajor(v string) (int, error) {
	mm, err := version.Parse(v, version.RHCOS)
	if err != nil {
		return 0, err
	}
	return mm[0], nil
}

// enforceSkew evaluates the skew from the operator's own record and mode
// (MachineConfiguration status.bootImageSkewEnforcementStatus) for the
// report only: the Upgradeable condition is the operator's to set.
func (b *bootImageBump) enforceSkew(ctx workflow.Context) {
	b.life.Phase(ctx, bumpPhaseSkew)
	mode := b.snap.Record.Mode
	if mode == "" {
		mode = SkewAutomatic
	}
	v := EvaluateSkew(SkewCheck{
		Mode:              mode,
		BootOCPVersion:    b.snap.Record.OCPVersion,
		BootRHCOSVersion:  b.snap.Record.RHCOSVersion,
		LimitOCPVersion:   b.snap.SkewLimitOCPVersion,
		LimitRHCOSVersion: b.snap.SkewLimitRHCOSVersion,
		Release:           b.snap.Release,
		ReleaseOSVersion:  b.snap.OSVersion,
	})
	b.result.Skew = v
	b.event(ctx, "skew", "running", fmt.Sprintf("operator's record %s (%s): upgradeable=%v (%s): %s; Upgradeable is the operator's to set",
		b.snap.Record.OCPVersion+b.snap.Record.RHCOSVersion, mode, v.Upgradeable, v.Reason, v.Message))
}
