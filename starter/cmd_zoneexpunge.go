package main

import (
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sf                   startFlags
			in                   zoneexpunge.ZoneExpungeInput
			sled, zone, newOwner string
			rackSleds            []string
		)
		cmd := &cobra.Command{
			Use:   "zone-expunge --sled UUID --zone UUID",
			Short: "Expunge a zone from its sled; for a Nexus, move its sagas once it is proven gone",
			Long: `Records the zone as expunged as of the sled's next config generation. Where
an enabled target blueprint owns the sled's config (Nexus's lockstep API,
--nexus-lockstep on the worker), the expunge is a child of the target with
the zone expunged, made the target (rebased if the target moves, never
overwritten): Nexus removes the zone, marks it ready for cleanup and moves
its sagas to a Nexus of the same generation, and the expunge commits once
inventory, the target and the saga table prove it (--owner-timeout).
Elsewhere it PUTs the sled's config without the zone itself. Today's
sled-agent ledgers the config and removes the zone afterwards; a sled that
another writer moved on with the zone still in stops the expunge with that
reason. Once inventory shows the new generation reconciled and the zone gone
(neither running nor failing to shut down), the zone is ready for cleanup;
only then, for a Nexus zone, are its unfinished sagas moved to a live Nexus
of its generation in one transaction and checked gone.

Sled-agents are reached at the ip:port Nexus's sled table records, and the
rack's sleds (where the other Nexus zones are counted and the new owner is
chosen) come from that table too; --rack-sleds adds sleds by hand (needed
only without a Nexus database). A Nexus zone is refused when no other
in-service Nexus would remain. Running it again for the same zone resumes an
unfinished expunge, or reports it already done.`,
			Example: `  starter zone-expunge --sled 7c0b…  --zone 3f2e… --wait
  starter zone-expunge --sled 7c0b… --zone 3f2e… --new-owner 5d11… --put-timeout 1h`,
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
					Workflow: zoneexpunge.ZoneExpunge, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		f.StringVar(&sled, "sled", "", "the sled running the zone (UUID, required)")
		f.StringVar(&zone, "zone", "", "the zone to expunge (UUID, required)")
		f.StringSliceVar(&rackSleds, "rack-sleds", nil, "extra sleds (UUIDs, comma-separated) where other Nexus zones are counted and the new saga owner is chosen; the rack's sleds come from Nexus's sled table, so this is needed only without a Nexus database")
		f.StringVar(&newOwner, "new-owner", "", "direct mode: the Nexus zone that adopts the sagas (default: the live Nexus with the lowest UUID)")
		f.DurationVar(&in.Timing.PutTimeout, "put-timeout", 30*time.Minute, "how long to keep retrying a failing zone removal")
		f.DurationVar(&in.Timing.RetryInitial, "retry-initial", time.Second, "first backoff between failed config PUTs")
		f.DurationVar(&in.Timing.RetryMax, "retry-max", 30*time.Second, "longest backoff between failed config PUTs")
		f.DurationVar(&in.Timing.PollInterval, "poll-interval", time.Second, "how often inventory is read for the proof")
		f.DurationVar(&in.Timing.ProofTimeout, "proof-timeout", 10*time.Minute, "how long inventory may take to show the zone gone")
		f.DurationVar(&in.Timing.OwnerTimeout, "owner-timeout", 30*time.Minute, "owner mode: how long Nexus may take to mark the zone ready for cleanup and move its sagas")
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
