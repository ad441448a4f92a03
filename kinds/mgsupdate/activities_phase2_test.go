package mgsupdate_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// The host flash precheck reads a phase 2 image's header before anything
// is touched: the image's ID at MGS is the header's SHA-256 (not the
// file's), and bytes that are not a phase 2 image, or whose data does not
// hash to what the header says, end the update there, with the device
// unchanged.
func TestHostPrecheckChecksThePhase2Header(t *testing.T) {
	m := newMGSAct(t)
	write := func(name string, b []byte) mgsupdate.ArtifactRef {
		path := filepath.Join(m.dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return mgsupdate.ArtifactRef{Version: "2", SHA256: simmgs.SHA256Hex(b), Path: path}
	}
	p1 := write("p1.bin", simmgs.MakeImage(simmgs.ImageHeader{Component: simmgs.CompHost, Version: "2"}, 32<<10))
	p2img := simmgs.MakePhase2Image("2", 64<<10)
	p2 := write("p2.bin", p2img)
	precheck := func(p2 mgsupdate.ArtifactRef) (mgsupdate.PrecheckResult, error) {
		return exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{
			SP: sled2, Component: mgs.ComponentHostBootFlash, Artifacts: []mgsupdate.ArtifactRef{p1, p2}})
	}

	pre, err := precheck(p2)
	require.NoError(t, err)
	assert.Equal(t, simmgs.Phase2ID(p2img), pre.Phase2ID, "the ID at MGS is the header's SHA-256")
	assert.NotEqual(t, p2.SHA256, pre.Phase2ID, "not the file's")
	assert.EqualValues(t, []int64{32 << 10, 64 << 10}, pre.ArtifactSizes)

	corrupt := func(mut func(b []byte) []byte) []byte { return mut(append([]byte(nil), p2img...)) }
	cases := map[string][]byte{
		"random bytes":          simmgs.MakeImage(simmgs.ImageHeader{Component: "x", Version: "2"}, 5000),
		"short":                 p2img[:100],
		"wrong version":         corrupt(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 1); return b }),
		"truncated data":        p2img[:len(p2img)-1],
		"data not the header's": corrupt(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }),
		"image over target":     corrupt(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[24:], 1<<40); return b }),
	}
	before := m.truth()
	for name, b := range cases {
		_, err := precheck(write("bad.bin", b))
		assert.Equal(t, failure.ArtifactInvalid, mgsErrType(err), name)
		assert.Contains(t, err.Error(), "is not a host phase 2 image", name)
	}
	after := m.truth()
	assert.Equal(t, before.Host.Slots, after.Host.Slots, "nothing was written")
	assert.Empty(t, after.Deliveries)
}
