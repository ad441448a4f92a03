package ledger_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Micro-benchmarks of the ledger's hot paths, one fresh database each:
//
//	go test -run '^$' -bench . -benchtime 2000x ./ledger/
//
// Every update writes its intent once per attempt, progress a few times,
// a handful of events and one finish; these are the statements behind the
// per-target PostgreSQL counts in bench/results.

func benchIntent(i int64) ledger.Attempt {
	target := fmt.Sprintf("sp/sled/%d", i)
	return ledger.Attempt{ID: uuid.New(), UpdateID: "fleetsaga/sp-firmware/" + target, Attempt: 1,
		Kind: "sp-firmware", Target: target, Artifact: "1.1.0", WorkflowID: "fleetsaga/sp-firmware/" + target, RunID: "run"}
}

// newAttempts records n intents outside the timer.
func newAttempts(b *testing.B, s *ledger.Store, n int) []ledger.Attempt {
	b.Helper()
	out := make([]ledger.Attempt, n)
	for i := range out {
		out[i] = benchIntent(int64(i))
		if err := s.RecordIntent(context.Background(), out[i]); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// BenchmarkRecordIntent writes new intents on distinct targets (the insert,
// the partial unique index check and the read-back).
func BenchmarkRecordIntent(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.RecordIntent(ctx, benchIntent(int64(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordIntentParallel is RecordIntent from many goroutines, as
// with P updates starting at once on several workers.
func BenchmarkRecordIntentParallel(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := env.Store.RecordIntent(ctx, benchIntent(next.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRecordIntentRetry rewrites an existing intent (a retried
// activity): the conflict path.
func BenchmarkRecordIntentRetry(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	a := newAttempts(b, env.Store, 1)[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.RecordIntent(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetProgress updates one running attempt's progress.
func BenchmarkSetProgress(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	a := newAttempts(b, env.Store, 1)[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.SetProgress(ctx, ledger.Progress{AttemptID: a.ID, Phase: "updating", Done: int64(i), Total: int64(b.N)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetProgressParallel updates the progress of many attempts at once.
func BenchmarkSetProgressParallel(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	attempts := newAttempts(b, env.Store, 64)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			a := attempts[i%int64(len(attempts))]
			if err := env.Store.SetProgress(ctx, ledger.Progress{AttemptID: a.ID, Phase: "updating", Done: i, Total: 1 << 20}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendEvent appends new steps to one attempt's log.
func BenchmarkAppendEvent(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	a := newAttempts(b, env.Store, 1)[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: fmt.Sprintf("step-%d", i),
			State: "ok", Message: "SP reset to activate the update", Worker: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventSignedHead is AppendEvent on a worker with an
// --audit-signing-key: the insert, the head read and its signed row, in
// one transaction.
func BenchmarkAppendEventSignedHead(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	s := env.Store.WithHeadSigner(key)
	a := newAttempts(b, s, 1)[0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: fmt.Sprintf("step-%d", i),
			State: "ok", Message: "SP reset to activate the update", Worker: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventDuplicate appends a step that is already there (a
// retried activity): ON CONFLICT DO NOTHING.
func BenchmarkAppendEventDuplicate(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	a := newAttempts(b, env.Store, 1)[0]
	e := ledger.Event{AttemptID: a.ID, Step: "start", State: "ok", Message: "started", Worker: "bench"}
	if err := env.Store.AppendEvent(ctx, e); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.AppendEvent(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFinishAttempt ends attempts (b.N of them, recorded beforehand).
func BenchmarkFinishAttempt(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	attempts := newAttempts(b, env.Store, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: attempts[i].ID, State: ledger.StateCompleted,
			Outcome: "CompletedUpdate"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFinishAttemptAgain finishes an ended attempt (a retried
// activity): no row changes, then the existence check.
func BenchmarkFinishAttemptAgain(b *testing.B) {
	env := testenv.New(b)
	ctx := context.Background()
	a := newAttempts(b, env.Store, 1)[0]
	f := ledger.Finish{AttemptID: a.ID, State: ledger.StateCompleted, Outcome: "CompletedUpdate"}
	if err := env.Store.FinishAttempt(ctx, f); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := env.Store.FinishAttempt(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
}
