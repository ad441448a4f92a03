package rollout_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// The Standard Webhooks specification's test vector (its libraries'
// TestWebhookSign, github.com/standard-webhooks/standard-webhooks,
// libraries/go/webhook_test.go).
func TestSignMatchesTheStandardWebhooksTestVector(t *testing.T) {
	key, err := rollout.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	got := rollout.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
}

// An attacker who captured one signed delivery replays it later: as it
// was, its timestamp is too old; with a fresh timestamp, or under another
// event's ID, the signature no longer matches. A receiver refuses both.
func TestReplayedDeliveryIsRefusedByItsReceiver(t *testing.T) {
	secret := []byte("webhook key")
	var hdr http.Header
	var body []byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr, body = r.Header.Clone(), must(io.ReadAll(r.Body))
		w.WriteHeader(http.StatusAccepted)
	}))
	defer recv.Close()
	a := &rollout.NotifyActivities{Webhooks: []rollout.Webhook{{URL: recv.URL, Secret: secret}}}
	n := rollout.Notice{ID: "fleetsaga/rollout/plan/q3/r0/1", Type: "rollout.gate.reached", Subject: "fleetsaga/rollout/plan/q3", Time: time.Now()}
	require.NoError(t, a.Notify(context.Background(), n))
	require.Equal(t, n.ID, hdr.Get(rollout.IDHeader))
	require.True(t, testenv.SignedBy(secret, hdr, body, time.Now()), "the delivery itself verifies")

	later := time.Now().Add(time.Hour)
	require.False(t, testenv.SignedBy(secret, hdr, body, later), "replayed as it was: too old")
	fresh := hdr.Clone()
	fresh.Set(rollout.TimestampHeader, strconv.FormatInt(later.Unix(), 10))
	require.False(t, testenv.SignedBy(secret, fresh, body, later), "with a new timestamp: the signature covers the old one")
	other := hdr.Clone()
	other.Set(rollout.IDHeader, "fleetsaga/rollout/plan/q3/r0/2")
	require.False(t, testenv.SignedBy(secret, other, body, time.Now()), "under another ID: the signature covers the ID")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
