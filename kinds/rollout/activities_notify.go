package rollout

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
)

// NotifyActivities send a rollout's notifications as
// CloudEvents (structured JSON mode) to the configured webhooks.
type NotifyActivities struct {
	Webhooks []Webhook
	HTTP     *http.Client
}

// Webhook is one receiver. Secret, when set, signs every delivery as
// Standard Webhooks does (Sign), so the receiver can tell fleetsaga's
// events from anyone's and refuse a replayed one by its timestamp.
type Webhook struct {
	// Name is how plans refer to it (notify.webhooks): the URL and the
	// secret stay in the worker's configuration.
	Name   string
	URL    string
	Secret []byte
}

// WebhookNotice is a notice for one named webhook: each webhook's
// delivery is its own activity, so one receiver's retries never repeat
// another's delivery.
type WebhookNotice struct {
	Webhook string `json:"webhook"`
	Notice  Notice `json:"notice"`
}

// NotifyWebhook delivers a notice to the webhook the plan names.
func (a *NotifyActivities) NotifyWebhook(ctx context.Context, in WebhookNotice) error {
	for _, w := range a.Webhooks {
		if w.Name == in.Webhook {
			body, err := encodeNotice(in.Notice)
			if err != nil {
				return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
			}
			return a.deliver(ctx, w, in.Notice.ID, body)
		}
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("no webhook named %q is configured on this worker (--webhook %s=URL)", in.Webhook, in.Webhook),
		failure.NotificationRefused, nil)
}

// The Standard Webhooks headers (github.com/standard-webhooks,
// spec/standard-webhooks.md): the event's ID, the delivery's Unix time
// and the signature of both with the body.
const (
	IDHeader        = "webhook-id"
	TimestampHeader = "webhook-timestamp"
	SignatureHeader = "webhook-signature"
)

// EventTypePrefix names fleetsaga's event types (reverse DNS, as the
// CloudEvents spec asks): io.fleetsaga.rollout.gate.reached, ….
const EventTypePrefix = "io.fleetsaga."

// eventSource is the CloudEvents source of every event.
const eventSource = "fleetsaga"

// webhookTimeout bounds one delivery: a receiver should answer at once and
// queue its own work.
const webhookTimeout = 10 * time.Second

// Notice is one event. ID is chosen by the workflow (workflow ID, run's
// original ID and a sequence number), so a retried delivery carries the
// same ID and a receiver keeps it once.
type Notice struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`    // e.g. "rollout.gate.reached"
	Subject string    `json:"subject"` // the rollout's workflow ID
	Time    time.Time `json:"time"`
	Data    any       `json:"data,omitempty"`
}

// Notify delivers n to every webhook. A receiver that refuses it (4xx) is
// a configuration problem and is not retried; a 5xx or no answer is.
func (a *NotifyActivities) Notify(ctx context.Context, n Notice) error {
	body, err := encodeNotice(n)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	var errs []error
	for i, w := range a.Webhooks {
		if err := a.deliver(ctx, w, n.ID, body); err != nil {
			errs = append(errs, fmt.Errorf("webhook %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

// encodeNotice is n as a CloudEvent in structured JSON mode.
func encodeNotice(n Notice) ([]byte, error) {
	e := cloudevents.NewEvent()
	e.SetID(n.ID)
	e.SetSource(eventSource)
	e.SetType(EventTypePrefix + n.Type)
	e.SetSubject(n.Subject)
	e.SetTime(n.Time)
	if n.Data != nil {
		if err := e.SetData(cloudevents.ApplicationJSON, n.Data); err != nil {
			return nil, fmt.Errorf("event %s: %w", n.ID, err)
		}
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("event %s: %w", n.ID, err)
	}
	return e.MarshalJSON()
}

// SecretPrefix starts a webhook secret: the rest is the key in base64.
const SecretPrefix = "whsec_"

// ParseSecret is the key a Standard Webhooks secret (whsec_<base64>)
// names. Its errors never hold the secret.
func ParseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(key) == 0 {
		return nil, errors.New("the secret must be " + SecretPrefix + " followed by the key in base64 (make one: echo " + SecretPrefix + "$(openssl rand -base64 32))")
	}
	return key, nil
}

// Sign is the signature header's value for a delivery of body with this
// ID at this time: "v1," and the base64 HMAC-SHA256 under secret (the
// bytes a whsec_ secret's base64 names) of "id.timestamp.body".
func Sign(secret []byte, id string, at time.Time, body []byte) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s.%d.", id, at.Unix())
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func (a *NotifyActivities) deliver(ctx context.Context, w Webhook, id string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return temporal.NewNonRetryableApplicationError("bad webhook URL", failure.InvalidInput, nil)
	}
	req.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	now := time.Now() // each delivery's own: a receiver refuses an old one
	req.Header.Set(IDHeader, id)
	req.Header.Set(TimestampHeader, strconv.FormatInt(now.Unix(), 10))
	if len(w.Secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(w.Secret, id, now, body))
	}
	client := a.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return errors.New("no answer: " + transportKind(err)) // the URL may carry credentials
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the receiver refused the event: HTTP %d", resp.StatusCode),
			failure.NotificationRefused, nil)
	}
	return fmt.Errorf("the receiver answered HTTP %d", resp.StatusCode)
}
