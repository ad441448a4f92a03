package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sf  startFlags
			in  mgsupdate.SPFirmwareInput
			sp  spFlags
			art artifactFlags
		)
		cmd := &cobra.Command{
			Use:   "sp-firmware --sled N --serial S --artifact FILE|URL --version V",
			Short: "Update one SP's firmware through MGS",
			Long: `Verifies the artifact's SHA-256, prechecks the SP (serial and part, active
and inactive versions; an SP already at the version is left alone; an SP on a
newer version is never rolled back), then delivers the image through any
reachable MGS under a fresh attempt UUID written to the ledger first, waits
for the SP to report it complete, resets the SP (through the other MGS if one
refuses to reset its own sled's SP) and waits for the new active version.
An SP reset mid-delivery, a failed or stuck update starts a new attempt
(bounded by --max-attempts). Someone else's update is waited for, and taken
over when it completes and nobody resets the SP within --takeover-timeout.
Cancelling aborts our in-flight update by its ID.

The artifact path must be readable by the workers; without --sha256 the
starter computes the digest of a local file, and a --sha256 that does not
match a local file is refused (a URL needs --sha256).`,
			Example: `  starter sp-firmware --sled 12 --serial BRM42000012 --artifact /srv/fw/sp-1.0.5.bin --version 1.0.5 --wait
  starter sp-firmware --switch 0 --serial BRM31000001 --artifact https://depot/sp-1.0.5.bin --version 1.0.5 \
      --sha256 9f2c… --expected-active 1.0.4 --json`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				var err error
				if in.SP, err = sp.target(); err != nil {
					return err
				}
				if in.Artifact, err = art.artifact("--artifact"); err != nil {
					return err
				}
				if err := in.Validate(); err != nil {
					return usageErr("%v", err)
				}
				return a.startUpdate(cmd, update{Kind: workflows.KindSPFirmware, Target: in.Target(), Artifact: in.Artifact.Version,
					Workflow: mgsupdate.SPFirmwareUpdate, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		sp.bind(f, true)
		art.bind(f, "artifact", "the SP image")
		f.StringVar(&in.ExpectedActive, "expected-active", "", "fail unless the active version is this")
		f.StringVar(&in.ExpectedInactive, "expected-inactive", "", `fail unless the inactive version is this ("invalid": no valid image)`)
		bindMGSTiming(f, &in.Timing)
		sf.bind(cmd)
		return cmd
	})
}

// spFlags name an SP: exactly one of --sled, --switch, --power, and its serial.
type spFlags struct {
	sled, sw, power int
	serial, part    string
}

func (s *spFlags) bind(f *pflag.FlagSet, switches bool) {
	f.IntVar(&s.sled, "sled", -1, "the sled's cubby (SP slot)")
	if switches {
		f.IntVar(&s.sw, "switch", -1, "the switch's SP slot")
		f.IntVar(&s.power, "power", -1, "the power shelf's SP slot")
	} else {
		s.sw, s.power = -1, -1
	}
	f.StringVar(&s.serial, "serial", "", "the SP's expected serial number (required: identity check)")
	f.StringVar(&s.part, "part", "", "the SP's expected part number (optional)")
}

func (s *spFlags) target() (mgsupdate.SPTarget, error) {
	t := mgsupdate.SPTarget{Serial: s.serial, Part: s.part}
	n := 0
	for _, c := range []struct {
		typ  mgs.SpType
		slot int
	}{{mgs.SpTypeSled, s.sled}, {mgs.SpTypeSwitch, s.sw}, {mgs.SpTypePower, s.power}} {
		if c.slot < 0 {
			continue
		}
		if c.slot > 65535 {
			return t, usageErr("--%s %d: SP slots are 0..65535", c.typ, c.slot)
		}
		t.Type, t.Slot = c.typ, uint16(c.slot)
		n++
	}
	if n != 1 {
		return t, usageErr("name exactly one SP: --sled N, --switch N or --power N")
	}
	if s.serial == "" {
		return t, usageErr("--serial is required (the SP's identity is checked before anything is written)")
	}
	return t, nil
}

// artifactFlags are an image's location, version and digest.
type artifactFlags struct {
	loc, version, sha string
	name              string
}

func (a *artifactFlags) bind(f *pflag.FlagSet, name, what string) {
	a.name = name
	f.StringVar(&a.loc, name, "", what+": a file path readable by the workers, or an http(s) URL (required)")
	vflag, sflag := "version", "sha256"
	if name != "artifact" {
		vflag, sflag = name+"-version", name+"-sha256"
	}
	f.StringVar(&a.version, vflag, "", what+": its version (required)")
	f.StringVar(&a.sha, sflag, "", what+": its SHA-256 (hex; default: computed from a local file)")
}

func (a *artifactFlags) artifact(flag string) (mgsupdate.Artifact, error) {
	out := mgsupdate.Artifact{Version: a.version, SHA256: strings.ToLower(a.sha)}
	if a.loc == "" {
		return out, usageErr("%s is required", flag)
	}
	if strings.HasPrefix(a.loc, "http://") || strings.HasPrefix(a.loc, "https://") {
		out.URL = a.loc
		if out.SHA256 == "" {
			return out, usageErr("%s is a URL: give its digest with the matching --…sha256 flag", flag)
		}
		return out, nil
	}
	abs, err := filepath.Abs(a.loc)
	if err != nil {
		return out, usageErr("%s: %v", flag, err)
	}
	out.Path = abs
	sum, err := fileSHA256(abs)
	switch {
	case err != nil && out.SHA256 == "":
		return out, usageErr("%s: %v", flag, err)
	case err != nil:
		// Not readable here (a path only the workers see): the workers
		// verify the given digest before anything is written.
	case out.SHA256 == "":
		out.SHA256 = sum
	case out.SHA256 != sum:
		return out, usageErr("%s %s has SHA-256 %s, not the %s given: wrong file or wrong digest", flag, abs, sum, out.SHA256)
	}
	return out, nil
}

// fileSHA256 is the hex SHA-256 of a local file.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// bindMGSTiming adds the pacing flags of the MGS update kinds (0 = default).
func bindMGSTiming(f *pflag.FlagSet, t *mgsupdate.MGSTiming) {
	f.DurationVar(&t.PollInterval, "poll-interval", 0, "status poll interval (default 3s)")
	f.DurationVar(&t.ProgressTimeout, "progress-timeout", 0, "abort and retry an update with no progress for this long (default 10m)")
	f.DurationVar(&t.TakeoverTimeout, "takeover-timeout", 0, "take over a concurrent complete update nobody resets within this (default 10m)")
	f.DurationVar(&t.ResetRetryInterval, "reset-retry-interval", 0, "wait before re-checking after a reset whose reply was lost (default 10s)")
	f.DurationVar(&t.NewVersionTimeout, "new-version-timeout", 0, "bound on the wait for the new version / host boot (default 60s SP, 120s switch, 30m host)")
	f.DurationVar(&t.AttemptDelay, "attempt-delay", 0, "pause between attempts (default 60s)")
	f.IntVar(&t.MaxAttempts, "max-attempts", 0, "bound on attempts (default 5)")
}
