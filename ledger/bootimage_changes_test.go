package ledger_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

func bumpAttempt(t *testing.T, s *ledger.Store, target string) uuid.UUID {
	t.Helper()
	a := ledger.Attempt{ID: uuid.New(), UpdateID: "fleetsaga/bootimage-bump/" + target, Attempt: 1,
		Kind: "bootimage-bump", Target: target, WorkflowID: "wf", RunID: uuid.NewString()}
	require.NoError(t, s.RecordIntent(context.Background(), a))
	return a.ID
}

func imageChange(att uuid.UUID, ms, prev, applied string) ledger.BootImageChange {
	img := func(ami string) json.RawMessage { return json.RawMessage(`{"platform":"AWS","ami":"` + ami + `"}`) }
	return ledger.BootImageChange{AttemptID: att, MachineSet: ms, Change: ledger.BootImageChangeImage,
		PreviousImage: img(prev), AppliedImage: img(applied)}
}

func scaleChange(att uuid.UUID, ms string, from, to int32) ledger.BootImageChange {
	return ledger.BootImageChange{AttemptID: att, MachineSet: ms, Change: ledger.BootImageChangeScale,
		PreviousReplicas: from, ScaledReplicas: to}
}

// abandon ends an attempt the way the release of a terminated run does.
func abandon(t *testing.T, s *ledger.Store, att uuid.UUID) {
	t.Helper()
	require.NoError(t, s.FinishAttempt(context.Background(), ledger.Finish{AttemptID: att, State: ledger.StateFailed, Outcome: "abandoned"}))
}

// summary is a change without its timestamps, for comparison.
type summary struct {
	MachineSet, Change, Previous, Applied string
	From, To                              int32
	AdoptedFrom                           uuid.UUID
}

func summarise(cs []ledger.BootImageChange) []summary {
	var out []summary
	for _, c := range cs {
		out = append(out, summary{c.MachineSet, string(c.Change), string(c.PreviousImage), string(c.AppliedImage),
			c.PreviousReplicas, c.ScaledReplicas, c.AdoptedFrom})
	}
	return out
}

func ami(id string) string { return `{"ami": "` + id + `", "platform": "AWS"}` } // as jsonb gives it back

// A terminated bump's changes, written before it made them, are adopted by
// the next bump of the cluster: the oldest original per MachineSet, also
// through a chain of terminated bumps; nothing before an attempt that ended
// on its own.
func TestBootImageChangesAdoptedFromAbandonedAttempts(t *testing.T) {
	ctx := context.Background()
	s := testenv.New(t).Store
	const target = "cluster/c1"

	dead := bumpAttempt(t, s, target)
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(dead, "worker-a", "ami-old", "ami-new")))
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(dead, "worker-a", "ami-new", "ami-new")), "a retry after the patch")
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(dead, "worker-b", "ami-old-b", "ami-new")))
	require.NoError(t, s.RecordBootImageChange(ctx, scaleChange(dead, "worker-a", 1, 2)))
	assert.Error(t, s.RecordBootImageChange(ctx, ledger.BootImageChange{AttemptID: dead, MachineSet: "worker-a", Change: ledger.BootImageChangeImage}),
		"an image change without its images")
	own, err := s.BootImageChanges(ctx, dead)
	require.NoError(t, err)
	assert.Equal(t, []summary{
		{"worker-a", "image", ami("ami-old"), ami("ami-new"), 0, 0, uuid.Nil},
		{"worker-a", "scale", "", "", 1, 2, uuid.Nil},
		{"worker-b", "image", ami("ami-old-b"), ami("ami-new"), 0, 0, uuid.Nil},
	}, summarise(own), "the first previous stands: the original")

	// The run is terminated; the next bump's intent releases its attempt.
	abandon(t, s, dead)
	next := bumpAttempt(t, s, target)
	adopted, err := s.AdoptAbandonedBootImageChanges(ctx, next)
	require.NoError(t, err)
	want := []summary{
		{"worker-a", "image", ami("ami-old"), ami("ami-new"), 0, 0, dead},
		{"worker-a", "scale", "", "", 1, 2, dead},
		{"worker-b", "image", ami("ami-old-b"), ami("ami-new"), 0, 0, dead},
	}
	assert.Equal(t, want, summarise(adopted))
	again, err := s.AdoptAbandonedBootImageChanges(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, want, summarise(again), "adopting again is a no-op")

	// The next bump is terminated too, after its own canary scaled worker-a
	// again, it patched worker-b to a newer image and patched worker-c: its
	// rows keep the originals it adopted, with its changes; the third
	// adopts both runs' changes, with the oldest original and the newest
	// change.
	require.NoError(t, s.RecordBootImageChange(ctx, scaleChange(next, "worker-a", 2, 3)))
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(next, "worker-b", "ami-new", "ami-newer")))
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(next, "worker-c", "ami-old", "ami-new")))
	own, err = s.BootImageChanges(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, []summary{
		{"worker-a", "image", ami("ami-old"), ami("ami-new"), 0, 0, dead},
		{"worker-a", "scale", "", "", 1, 3, dead},
		{"worker-b", "image", ami("ami-old-b"), ami("ami-newer"), 0, 0, dead},
		{"worker-c", "image", ami("ami-old"), ami("ami-new"), 0, 0, uuid.Nil},
	}, summarise(own))
	abandon(t, s, next)
	third := bumpAttempt(t, s, target)
	adopted, err = s.AdoptAbandonedBootImageChanges(ctx, third)
	require.NoError(t, err)
	assert.Equal(t, []summary{
		{"worker-a", "image", ami("ami-old"), ami("ami-new"), 0, 0, dead},
		{"worker-a", "scale", "", "", 1, 3, dead},
		{"worker-b", "image", ami("ami-old-b"), ami("ami-newer"), 0, 0, dead},
		{"worker-c", "image", ami("ami-old"), ami("ami-new"), 0, 0, next},
	}, summarise(adopted))

	// The third ended on its own (its rollback ran): the fourth adopts
	// nothing, neither its changes nor the older ones it adopted.
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: third, State: ledger.StateFailed, Outcome: "CanaryFailed"}))
	fourth := bumpAttempt(t, s, target)
	adopted, err = s.AdoptAbandonedBootImageChanges(ctx, fourth)
	require.NoError(t, err)
	assert.Empty(t, adopted)

	// A completed bump is not adopted either; another cluster's never is.
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: fourth, State: ledger.StateCompleted}))
	other := bumpAttempt(t, s, "cluster/c2")
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(other, "worker-a", "ami-x", "ami-y")))
	abandon(t, s, other)
	done := bumpAttempt(t, s, target)
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(done, "worker-a", "ami-old", "ami-new")))
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: done, State: ledger.StateCompleted}))
	last := bumpAttempt(t, s, target)
	adopted, err = s.AdoptAbandonedBootImageChanges(ctx, last)
	require.NoError(t, err)
	assert.Empty(t, adopted)
}

// A run reset by an operator keeps its attempt (the same derived ID): the
// changes it recorded before the reset are returned with the adopted ones,
// so the reset run's rollback undoes them too.
func TestBootImageChangesOfAResetRunAreItsOwnToUndo(t *testing.T) {
	env := testenv.New(t)
	s, ctx := env.Store, context.Background()
	att := bumpAttempt(t, s, "cluster/reset")
	require.NoError(t, s.RecordBootImageChange(ctx, imageChange(att, "ms-a", "old", "new")))

	got, err := s.AdoptAbandonedBootImageChanges(ctx, att)
	require.NoError(t, err)
	assert.Equal(t, []summary{{MachineSet: "ms-a", Change: string(ledger.BootImageChangeImage),
		Previous: ami("old"), Applied: ami("new")}}, summarise(got))
}
