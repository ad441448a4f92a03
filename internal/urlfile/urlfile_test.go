package urlfile

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWaitReturnsWhatWriteRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.url")
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = Write(path, "http://127.0.0.1:41234")
	}()
	url, err := Wait(context.Background(), path, 10*time.Second, nil)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:41234", url)
}

func TestWaitStopsWhenTheProcessExited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.url")
	_, err := Wait(context.Background(), path, time.Hour, func() error { return errors.New("fleetsim exited") })
	require.EqualError(t, err, "fleetsim exited")
}

func TestWaitGivesUpAfterItsTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.url")
	_, err := Wait(context.Background(), path, 0, nil)
	require.ErrorContains(t, err, "no address in")
}
