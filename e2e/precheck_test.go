package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// Mistakes never start workflows. `--sled 99`, a wrong
// serial and a downgrade each exit 2 with one line, and leave no update
// workflow and no ledger row; --no-precheck still starts (and the update
// fails as it always did).
func TestStarterRefusesWhatItsPrecheckWouldEndOn(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 1, Seed: 7, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStackOn(t, devstack.TemporalDev, s, 1, 0)
	op := operator{t, stack}
	serial := func(slot int) string { return s.Racks[0].Sleds[slot].Serial }
	img, older := spImage(t, "1.1.0"), spImage(t, "0.9.0")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no such SP":   {[]string{"--sled", "99", "--serial", serial(1), "--artifact", img, "--version", "1.1.0"}, "sled 99"},
		"wrong serial": {[]string{"--sled", "1", "--serial", "BRM-NOT-IT", "--artifact", img, "--version", "1.1.0"}, "WrongDevice"},
		"downgrade":    {[]string{"--sled", "2", "--serial", serial(2), "--artifact", older, "--version", "0.9.0"}, "WouldDowngrade"},
	} {
		t.Run(name, func(t *testing.T) {
			r := op.run(append([]string{"sp-firmware"}, tc.args...)...)
			require.Equal(t, 2, r.code, "%s: %s%s", name, r.stdout, r.stderr)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(r.stderr), "\n")+1, "one line: %s", r.stderr)
			require.Contains(t, r.stderr, "refused before starting, nothing was changed")
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout, "nothing was started")
			target := "sp/sled/" + tc.args[1]
			require.Equal(t, 2, op.run("status", "fleetsaga/sp-firmware/"+target).code, "no update workflow for %s", target)
			var rows []map[string]any
			op.json(&rows, "list", "--ledger", "--target", target)
			require.Empty(t, rows, "no ledger row for %s", target)
		})
	}
	// The operator who knows better still can: the update starts, and its
	// own precheck ends it.
	r := op.run("sp-firmware", "--sled", "1", "--serial", "BRM-NOT-IT", "--artifact", img, "--version", "1.1.0", "--no-precheck", "--wait")
	require.Equal(t, 1, r.code, "started without the precheck, the update fails: %s", r.stderr)
	require.Contains(t, r.stderr, "WrongDevice")
}
