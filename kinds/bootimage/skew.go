package bootimage

import (
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/workflow"
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
		cmp, err := CompareReleaseVersions(c.BootOCPVersion, c.LimitOCPVersion)
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
		cmp, err := compareRHCOS(c.BootRHCOSVersion, c.LimitRHCOSVersion)
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

// ParseReleaseVersion parses x.y.z (a "-suffix" is ignored).
func ParseReleaseVersion(v string) ([3]int, error) {
	var out [3]int
	core, _, _ := strings.Cut(strings.TrimSpace(v), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("version %q is not a release version x.y.z", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("version %q is not a release version x.y.z", v)
		}
		out[i] = n
	}
	return out, nil
}

// CompareReleaseVersions compares two x.y.z release versions numerically (so
// 4.9.0 < 4.16.0, unlike a string compare).
func CompareReleaseVersions(a, b string) (int, error) {
	av, err := ParseReleaseVersion(a)
	if err != nil {
		return 0, err
	}
	bv, err := ParseReleaseVersion(b)
	if err != nil {
		return 0, err
	}
	for i := range av {
		if av[i] != bv[i] {
			if av[i] < bv[i] {
				return -1, nil
			}
			return 1, nil
		}
	}
	return 0, nil
}

// rhcosMajorMinor is the RHEL major.minor of an RHCOS version, read as
// the operator reads it (machine-config-operator pkg/operator/status.go,
// checkRHCOSVersionSkew): "9.6" as stated, "9.6.20250523-0" (a date of 8
// digits) as it is, and the legacy "416.94.202510081640-0" (a timestamp of
// 12 digits) from its second number, whose first digit is the RHEL major
// (94 is RHEL 9.4, 810 RHEL 8.10).
func rhcosMajorMinor(v string) ([2]int, error) {
	var out [2]int
	bad := fmt.Errorf("RHCOS version %q is not major.minor[.build]", v)
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return out, bad
	}
	major, minor := parts[0], parts[1]
	if len(parts) >= 3 {
		stamp, _, _ := strings.Cut(parts[2], "-")
		switch len(stamp) {
		case 8:
		case 12:
			if len(minor) < 2 {
				return out, bad
			}
			major, minor = minor[:1], minor[1:]
		default:
			return out, fmt.Errorf("RHCOS version %q has a build stamp of neither 8 nor 12 digits", v)
		}
	}
	for i, p := range []string{major, minor} {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, bad
		}
		out[i] = n
	}
	if out[0] >= 100 {
		return out, fmt.Errorf("RHCOS version %q uses the old <ocp>.<rhel> scheme without its build stamp; state a major.minor RHCOS version", v)
	}
	return out, nil
}

func compareRHCOS(a, b string) (int, error) {
	av, err := rhcosMajorMinor(a)
	if err != nil {
		return 0, err
	}
	bv, err := rhcosMajorMinor(b)
	if err != nil {
		return 0, err
	}
	for i := range av {
		if av[i] != bv[i] {
			if av[i] < bv[i] {
				return -1, nil
			}
			return 1, nil
		}
	}
	return 0, nil
}

func rhcosRHELMajor(v string) (int, error) {
	mm, err := rhcosMajorMinor(v)
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
