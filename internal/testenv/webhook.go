package testenv

import (
	"crypto/hmac"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// Receiver is a webhook that keeps every event whose signature verifies,
// as a receiver of a rollout's notifications would (each delivery, retries
// and a reset run's deliveries included).
type Receiver struct {
	mu     sync.Mutex
	events []cloudevents.Event
	bad    int
}

// NewReceiver serves a webhook checking bodies against secret and returns
// it with its URL.
func NewReceiver(t testing.TB, secret []byte) (*Receiver, string) {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		var e cloudevents.Event
		if !SignedBy(secret, req.Header, body, time.Now()) || e.UnmarshalJSON(body) != nil {
			r.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.events = append(r.events, e)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// signatureTolerance is how old (or how far ahead) a delivery's
// timestamp may be, as Standard Webhooks' libraries accept it.
const signatureTolerance = 5 * time.Minute

// SignedBy says whether a delivery's headers carry a Standard Webhooks
// signature of its ID, timestamp and body under secret, with a timestamp
// within signatureTolerance of now: what a receiver checks.
func SignedBy(secret []byte, h http.Header, body []byte, now time.Time) bool {
	ts, err := strconv.ParseInt(h.Get(rollout.TimestampHeader), 10, 64)
	if err != nil {
		return false
	}
	at := time.Unix(ts, 0)
	if at.Before(now.Add(-signatureTolerance)) || at.After(now.Add(signatureTolerance)) {
		return false
	}
	want := rollout.Sign(secret, h.Get(rollout.IDHeader), at, body)
	for _, sig := range strings.Fields(h.Get(rollout.SignatureHeader)) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// Bad counts the deliveries refused (a wrong signature or not an event).
func (r *Receiver) Bad() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// ByType groups every delivery by event type (without the io.fleetsaga.
// prefix).
func (r *Receiver) ByType() map[string][]cloudevents.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]cloudevents.Event{}
	for _, e := range r.events {
		typ := strings.TrimPrefix(e.Type(), rollout.EventTypePrefix)
		out[typ] = append(out[typ], e)
	}
	return out
}

// ByID groups every delivery by event ID: a receiver keeps the first of
// each ID, so every delivery of an ID must say the same.
func (r *Receiver) ByID() map[string][]cloudevents.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]cloudevents.Event{}
	for _, e := range r.events {
		out[e.ID()] = append(out[e.ID()], e)
	}
	return out
}
