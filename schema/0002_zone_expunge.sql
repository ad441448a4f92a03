-- Zone expunge (DESIGN.md §3.5, DOMAIN.md §D–§E): the disposition of each
-- zone fleetsaga expunged, and the Nexus sagas it moved.

-- One row per zone ever expunged. A zone is expunged as of the sled config
-- generation that first leaves it out (expunged_as_of); it is ready for
-- cleanup only once inventory showed that generation ledgered and the zone
-- gone (ready_generation is the generation inventory showed).
CREATE TABLE zone_disposition (
    zone_id          uuid        PRIMARY KEY,
    sled_id          uuid        NOT NULL,
    zone_kind        text        NOT NULL,
    disposition      text        NOT NULL CHECK (disposition IN ('in_service', 'expunged')),
    expunged_as_of   bigint      CHECK (expunged_as_of >= 1),
    ready_for_cleanup boolean    NOT NULL DEFAULT false,
    ready_generation bigint,
    ready_at         timestamptz,
    -- the expunge attempt that recorded the intent (update_attempt.id)
    attempt_id       uuid        NOT NULL REFERENCES update_attempt (id),
    -- set when the expunge committed (Nexus: after the sagas moved)
    completed_at     timestamptz,
    sagas_moved      integer,
    saga_new_owner   uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (disposition <> 'expunged' OR expunged_as_of IS NOT NULL),
    CHECK (NOT ready_for_cleanup OR (disposition = 'expunged' AND ready_generation >= expunged_as_of)),
    CHECK (completed_at IS NULL OR ready_for_cleanup)
);

CREATE INDEX zone_disposition_by_sled ON zone_disposition (sled_id);

-- Every saga moved off an expunged Nexus, with the attempt that moved it.
-- Written before and after the move (idempotent), so a retried step loses
-- nothing.
CREATE TABLE zone_saga_reassignment (
    zone_id    uuid        NOT NULL REFERENCES zone_disposition (zone_id),
    saga_id    uuid        NOT NULL,
    attempt_id uuid        NOT NULL REFERENCES update_attempt (id),
    new_owner  uuid        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (zone_id, saga_id)
);
