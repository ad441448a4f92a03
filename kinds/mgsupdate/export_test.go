package mgsupdate

import (
	"context"
	"time"
)

// Functions, not methods: every exported method of MGSActivities is
// registered as an activity.

// VerifyArtifact exposes verifyArtifact to the external tests.
func VerifyArtifact(ctx context.Context, a *MGSActivities, r ArtifactRef) (int64, error) {
	return a.verifyArtifact(ctx, r)
}

// SetArtifactStall replaces artifactStallTimeout, so a test drives a
// stalled download in a second.
func SetArtifactStall(a *MGSActivities, d time.Duration) { a.artifactStall = d }
