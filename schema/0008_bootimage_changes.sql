-- Boot image changes (issue #14, chaos seeds 2 and 3, invariant 7). A boot
-- image bump writes what it is about to change on a MachineSet (its image
-- before the patch, its replicas before the canary scale-up) before it
-- changes it. A terminated bump never runs its compensations; the next bump
-- of the cluster finds them here and adopts them into its own rollback, as
-- rows of its own attempt (adopted_from names the dead attempt).
CREATE TABLE bootimage_change (
    attempt_id        uuid        NOT NULL REFERENCES update_attempt (id),
    machine_set       text        NOT NULL,
    change            text        NOT NULL CHECK (change IN ('image', 'scale')),
    -- image: the MachineSet's image before the patch and the one applied.
    previous_image    jsonb,
    applied_image     jsonb,
    -- scale: the replicas before the canary scale-up and after it.
    previous_replicas integer,
    scaled_replicas   integer,
    adopted_from      uuid        REFERENCES update_attempt (id),
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    -- One row per change of a MachineSet per attempt: the first one written
    -- stands, so the oldest original is kept.
    PRIMARY KEY (attempt_id, machine_set, change),
    CHECK ((change = 'image') = (previous_image IS NOT NULL AND applied_image IS NOT NULL)),
    CHECK ((change = 'scale') = (previous_replicas IS NOT NULL AND scaled_replicas IS NOT NULL))
);
