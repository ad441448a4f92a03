package rollout_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// A webhook receives one CloudEvent per notice, signed with its secret,
// that the CloudEvents SDK reads back; a receiver that refuses it is not
// retried, one that fails is.
func TestNotifySendsSignedCloudEvents(t *testing.T) {
	secret := []byte("webhook secret")
	var mu sync.Mutex
	var got []cloudevents.Event
	var status = http.StatusAccepted
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !testenv.SignedBy(secret, r.Header, body, time.Now()) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var e cloudevents.Event
		if err := e.UnmarshalJSON(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, e)
		w.WriteHeader(status)
		mu.Unlock()
	}))
	defer recv.Close()
	a := &rollout.NotifyActivities{Webhooks: []rollout.Webhook{{URL: recv.URL, Secret: secret}}}
	at := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	n := rollout.Notice{ID: "fleetsaga/rollout/plan/q3/r0/1", Type: "rollout.gate.reached", Subject: "fleetsaga/rollout/plan/q3",
		Time: at, Data: map[string]string{"stage": "host-os", "digest": "9e5671f64c44"}}
	require.NoError(t, a.Notify(context.Background(), n))
	require.Len(t, got, 1)
	e := got[0]
	require.Equal(t, "io.fleetsaga.rollout.gate.reached", e.Type())
	require.Equal(t, n.ID, e.ID())
	require.Equal(t, "fleetsaga", e.Source())
	require.Equal(t, n.Subject, e.Subject())
	require.True(t, at.Equal(e.Time()))
	var data map[string]string
	require.NoError(t, e.DataAs(&data))
	require.Equal(t, "host-os", data["stage"])

	wrong := &rollout.NotifyActivities{Webhooks: []rollout.Webhook{{URL: recv.URL, Secret: []byte("not it")}}}
	err := wrong.Notify(context.Background(), n)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.NotificationRefused, app.Type())
	require.True(t, app.NonRetryable())
	require.NotContains(t, err.Error(), "not it", "the secret is in no error")

	status = http.StatusServiceUnavailable
	err = a.Notify(context.Background(), n)
	require.ErrorContains(t, err, "HTTP 503")
	require.False(t, errors.As(err, &app), "a failing receiver is retried")
}
