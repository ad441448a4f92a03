package mgsupdate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fleetsaga/fleetsaga/fleet"
)

// phase2UploadStallTimeout ends a phase 2 upload that sled-agent has
// taken no bytes of for this long, or (every byte sent) not answered: the
// fleet request timeout, the longest any fleet answer may take
// (activities_stall.go says why a stall, not a timeout, bounds it).
const phase2UploadStallTimeout = fleet.RequestTimeout

// errUploadStalled: the upload made no progress for its stall timeout.
var errUploadStalled = errors.New("sled-agent took no bytes of phase 2 and gave no answer")

// uploadPhase2 sends the image into the sled's artifact store under
// generation. Its bytes sent of the image's size are the attempt's
// progress (pw: the workflow hears of each tenth). A stalled upload is
// retried (a retry sends it from the start: the store keeps no partial
// artifact).
func (a *MGSActivities) uploadPhase2(ctx context.Context, s hostSled, art ArtifactRef, generation uint64, pw *progressWriter) error {
	rc, size, err := a.openArtifact(ctx, art)
	if err != nil {
		return err
	}
	defer rc.Close()
	limit := a.phase2UploadStall()
	stall := watchStalls(ctx, limit, errUploadStalled)
	defer stall.stop()
	phase := string(MGSPhaseHostPhase2)
	// The transport may still read the body after PutArtifact returned
	// (RoundTrip closes it asynchronously): over marks the end of the
	// upload's reports, before pw serves the next try.
	var mu sync.Mutex
	var sent int64
	over := false
	body := reportingReader(ctx, rc, func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		if over {
			return
		}
		stall.alive()
		sent = n
		pw.write(ctx, phase, n, size, false)
	})
	_, err = s.upload.PutArtifact(stall.ctx, strings.ToLower(art.SHA256), generation, body, size)
	mu.Lock()
	over = true
	mu.Unlock()
	if stall.stalled() {
		return fmt.Errorf("%w for %s (%d of %d bytes sent); sent again from the start", errUploadStalled, limit, sent, size)
	}
	if err == nil {
		pw.write(ctx, phase, size, size, true)
	}
	return err
}

// phase2UploadStall is phase2UploadStallTimeout, or a test worker's
// shorter Phase2UploadStall.
func (a *MGSActivities) phase2UploadStall() time.Duration {
	if a.Phase2UploadStall > 0 {
		return a.Phase2UploadStall
	}
	return phase2UploadStallTimeout
}
