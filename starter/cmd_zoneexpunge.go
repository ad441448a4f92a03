package main

import (
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sf                   startFlags
			in                   workflows.ZoneExpungeInput
			sled, zone, newOwner string
			rackSleds            []string
		)
		cmd := &cobra.Command{
			Use:   "zone-expunge --sled UUID --zone UUID",
			Short: "Expunge a zone from its sled; for a Nexus, move its sagas once it is proven gone",
			Long: `Records the zone as expunged as of the sled's next config generation, then
PUTs the sled's config without it, retrying with backoff while the sled-agent
fails to remove the zone (it keeps its old ledger until the removal succeeds).
A sled that moved on to a newer config is re-read and the expunge rebased,
never overwritten. Once inventory shows the new generation ledgered and the
zone gone, the zone is ready for cleanup; only then, for a Nexus zone, are its
unfinished sagas moved to a live Nexus in one transaction and checked gone.

A Nexus zone is refused when no other in-service Nexus would remain among
--rack-sleds (list every sled of the rack). Running it again for the same
zone resumes an unfinished expunge, or reports it already done.`,
			Example: `  starter zone-expunge --sled 7c0b…  --zone 3f2e… --rack-sleds 7c0b…,91aa…,c4d2… --wait
  starter zone-expunge --sled 7c0b… --zone 3f2e… --rack-sleds 7c0b…,91aa… --new-owner 5d11… --put-timeout 1h`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				var err error
				if in.Sled, err = parseUUIDFlag("--sled", sled, true); err != nil {
					return err
				}
				if in.Zone, err = parseUUIDFlag("--zone", zone, true); err != nil {
					return err
				}
				if in.NewOwner, err = parseUUIDFlag("--new-owner", newOwner, false); err != nil {
					return err
				}
				for _, s := range rackSleds {
					id, err := parseUUIDFlag("--rack-sleds", s, true)
					if err != nil {
						return err
					}
					in.RackSleds = append(in.RackSleds, id)
				}
				if err := in.Validate(); err != nil {
					return usageErr("%v", err)
				}
				return a.startUpdate(cmd, update{Kind: workflows.KindZoneExpunge, Target: in.Target(),
					Workflow: workflows.ZoneExpunge, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		f.StringVar(&sled, "sled", "", "the sled running the zone (UUID, required)")
		f.StringVar(&zone, "zone", "", "the zone to expunge (UUID, required)")
		f.StringSliceVar(&rackSleds, "rack-sleds", nil, "every sled of the rack (UUIDs, comma-separated): where the other Nexus zones are counted and the new saga owner is chosen")
		f.StringVar(&newOwner, "new-owner", "", "the Nexus zone that adopts the sagas (default: the live Nexus with the lowest UUID)")
		f.DurationVar(&in.Timing.PutTimeout, "put-timeout", 30*time.Minute, "how long to keep retrying a failing zone removal")
		f.DurationVar(&in.Timing.RetryInitial, "retry-initial", time.Second, "first backoff between failed config PUTs")
		f.DurationVar(&in.Timing.RetryMax, "retry-max", 30*time.Second, "longest backoff between failed config PUTs")
		f.DurationVar(&in.Timing.PollInterval, "poll-interval", time.Second, "how often inventory is read for the proof")
		f.DurationVar(&in.Timing.ProofTimeout, "proof-timeout", 10*time.Minute, "how long inventory may take to show the zone gone")
		sf.bind(cmd)
		return cmd
	})
}

// parseUUIDFlag parses a UUID flag value; a bad or missing required value is
// a usage error (exit 2, before contacting any server).
func parseUUIDFlag(name, v string, required bool) (uuid.UUID, error) {
	if v == "" {
		if required {
			return uuid.Nil, usageErr("%s is required", name)
		}
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, usageErr("%s: %q is not a UUID", name, v)
	}
	return id, nil
}
