package rollout

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Notify is whom a rollout tells of its events: webhooks by the names the
// worker's configuration gives them (their URLs and signing secrets stay
// with the worker, never in a plan or a workflow's input).
type Notify struct {
	Webhooks []string `json:"webhooks"`
	// StallAfter: no update ended or started for this long while the
	// rollout runs is a stall, told once per stall (0: not watched).
	StallAfter time.Duration `json:"stallAfter,omitempty"`
}

var webhookName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// minStallAfter: a shorter stall is an update's normal pace.
const minStallAfter = 10 * time.Second

// Validate names what is wrong with the notifications.
func (n Notify) Validate() error {
	var errs []error
	if len(n.Webhooks) == 0 {
		errs = append(errs, errors.New("notify: webhooks: name at least one webhook the workers configure (--webhook NAME=URL)"))
	}
	seen := map[string]bool{}
	for i, w := range n.Webhooks {
		if !webhookName.MatchString(w) {
			errs = append(errs, fmt.Errorf("notify: webhooks[%d]: %q is not a webhook name (lower-case letters, digits, '-', '_'; the URL is the worker's)", i, w))
		}
		if seen[w] {
			errs = append(errs, fmt.Errorf("notify: webhooks[%d]: %q appears twice", i, w))
		}
		seen[w] = true
	}
	if n.StallAfter != 0 && n.StallAfter < minStallAfter {
		errs = append(errs, fmt.Errorf("notify: stallAfter must be 0 (off) or at least %s", minStallAfter))
	}
	return errors.Join(errs...)
}
