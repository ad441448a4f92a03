package sled_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
)

// stallBody is large enough that the socket buffers between client and
// store cannot hide a store that stopped reading: the client cannot have
// sent all of it.
const stallBody = 48 << 20

// The artifact_upload_stall fault: the store takes a quarter of the PUT's
// body, then reads nothing more and answers nothing until the client
// gives up; the fault is then spent, and the same upload sent again is
// stored.
func TestArtifactUploadStallStopsReadingUntilTheClientGivesUp(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp"})
	srv := startSim(t, s, "")
	id := s.Racks[0].Sleds[0].ID
	c := sledagent.New("http://"+sledTruth(t, srv, id).Address, nil) // direct: a proxy would hide the stall in its buffers
	sum := sha256.New()
	_, err := io.Copy(sum, io.LimitReader(zeros{}, stallBody))
	require.NoError(t, err)
	hash := hex.EncodeToString(sum.Sum(nil))
	require.NoError(t, c.PutArtifactConfig(ctx, sledagent.ArtifactConfig{Generation: 1, Artifacts: []string{hash}}))
	armFault(t, srv, faults.Fault{Kind: faults.ArtifactUploadStall, Target: "sled/" + id.String(), AfterPercent: 25, Times: 1})

	body := &countingReader{r: io.LimitReader(zeros{}, stallBody)}
	pctx, cancel := context.WithTimeout(ctx, time.Second) // the client giving up
	defer cancel()
	_, err = c.PutArtifact(pctx, hash, 1, body, stallBody)
	require.ErrorIs(t, err, context.DeadlineExceeded, "no answer while stalled")
	sent := body.n.Load()
	assert.GreaterOrEqual(t, sent, int64(stallBody/4), "the store took a quarter")
	assert.Less(t, sent, int64(stallBody), "then stopped reading")
	assert.NotContains(t, sledTruth(t, srv, id).Host.Artifacts, hash)
	assert.Empty(t, listFaults(t, srv), "spent after its one PUT")
	assert.Equal(t, []int{1}, firedCounts(t, srv, faults.ArtifactUploadStall))

	res, err := c.PutArtifact(ctx, hash, 1, io.LimitReader(zeros{}, stallBody), stallBody)
	require.NoError(t, err, "sent again, it is stored")
	assert.Equal(t, uint64(2), res.SuccessfulWrites)
	assert.Contains(t, sledTruth(t, srv, id).Host.Artifacts, hash)
}

// firedCounts are the Fired counts of the faults of kind that fired.
func firedCounts(t *testing.T, srv *fleetsim.Server, kind faults.Kind) []int {
	t.Helper()
	var out []int
	for _, f := range getFaults(t, srv, "/faults/fired") {
		if f.Kind == kind {
			out = append(out, f.Fired)
		}
	}
	return out
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// countingReader counts the bytes the client's transport took.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
