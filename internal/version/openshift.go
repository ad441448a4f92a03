package version

import (
	"fmt"
	"strconv"
	"strings"
)

// Release is the boot image bump's rule for OpenShift release versions:
// x.y.z, a "-suffix" ignored ("4.16.0-rc.1" is 4.16.0).
var Release = Strict{parse: func(v string) ([]int, error) {
	out := make([]int, 3)
	core, _, _ := strings.Cut(strings.TrimSpace(v), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("version %q is not a release version x.y.z", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("version %q is not a release version x.y.z", v)
		}
		out[i] = n
	}
	return out, nil
}}

// RHCOS is the boot image bump's rule for RHCOS versions: their RHEL
// major.minor, read as the operator reads it (machine-config-operator
// pkg/operator/status.go, checkRHCOSVersionSkew): "9.6" as stated,
// "9.6.20250523-0" (a date of 8 digits) as it is, and the legacy
// "416.94.202510081640-0" (a timestamp of 12 digits) from its second
// number, whose first digit is the RHEL major (94 is RHEL 9.4, 810 RHEL
// 8.10).
var RHCOS = Strict{parse: func(v string) ([]int, error) {
	out := make([]int, 2)
	bad := fmt.Errorf("RHCOS version %q is not major.minor[.build]", v)
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return nil, bad
	}
	major, minor := parts[0], parts[1]
	if len(parts) >= 3 {
		stamp, _, _ := strings.Cut(parts[2], "-")
		switch len(stamp) {
		case 8:
		case 12:
			if len(minor) < 2 {
				return nil, bad
			}
			major, minor = minor[:1], minor[1:]
		default:
			return nil, fmt.Errorf("RHCOS version %q has a build stamp of neither 8 nor 12 digits", v)
		}
	}
	for i, p := range []string{major, minor} {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, bad
		}
		out[i] = n
	}
	if out[0] >= 100 {
		return nil, fmt.Errorf("RHCOS version %q uses the old <ocp>.<rhel> scheme without its build stamp; state a major.minor RHCOS version", v)
	}
	return out, nil
}}
