package mgs_test

import (
	"bytes"
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// 1,000 SPs updated at once keep no image bodies: the heap stays small.
func TestThousandSPsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	const n = 1000
	s := &spec.Spec{Seed: 3, SpeedUp: 1000, Timings: spec.DefaultTimings()}
	s.Racks = spec.GenerateRacks(n, 3)
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{
		Spec: s, Faults: faults.NewRegistry(3), Log: zerolog.Nop(),
	}, "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompSP, Version: "1.1.0"}, 1<<20)
	c := fmgs.New(srv.URL+"/mgs/0", &http.Client{Timeout: time.Minute})
	var g errgroup.Group
	g.SetLimit(32)
	var mu sync.Mutex
	var failed []error
	for i := 0; i < n; i++ {
		g.Go(func() error {
			err := c.UpdateStart(context.Background(), fmgs.SpIdentifier{Type: fmgs.SpTypeSled, Slot: uint16(i)},
				mgs.CompSP, uuid.New(), 0, bytes.NewReader(img), int64(len(img)))
			if err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	require.Empty(t, failed)

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap: %d MiB before, %d MiB after 1,000 x 1 MiB updates in flight (grew %d KiB)",
		before.HeapAlloc>>20, after.HeapAlloc>>20, grown>>10)
	// 1,000 full bodies would be 1,000 MiB; what is kept is a few hundred
	// bytes per update plus a goroutine per delivery.
	assert.Less(t, grown, int64(64<<20))
}
