package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// GroupPrefix marks a group in Policy.Allowed ("group:sp-admins"); other
// entries are principals.
const GroupPrefix = "group:"

// Policy is what a gate needs before it opens. The zero Policy with
// Approvers 1 is the plan's `approval: true`: one approver, any allowed
// signer.
type Policy struct {
	// Approvers is how many distinct principals must approve (default 1).
	Approvers int `json:"approvers,omitempty"`
	// FourEyes refuses an approval by the principal who started the rollout.
	FourEyes bool `json:"fourEyes,omitempty"`
	// Allowed lists who may approve: persons (as the people file names
	// them), identities ("ssh:alice", "oidc:<issuer>#<subject>"), a bare
	// allowed_signers principal ("alice", read as "ssh:alice"), or groups
	// as "group:NAME" (OIDC groups). Empty: any allowed signer.
	Allowed []string `json:"allowed,omitempty"`
}

// Validate checks a policy as written in a plan.
func (p Policy) Validate() error {
	if p.Approvers < 0 {
		return fmt.Errorf("approvers must be at least 1, not %d", p.Approvers)
	}
	for _, a := range p.Allowed {
		if strings.TrimSpace(a) == "" || strings.TrimSpace(strings.TrimPrefix(a, GroupPrefix)) == "" {
			return fmt.Errorf("allowed: empty principal or group %q", a)
		}
	}
	if p.Approvers > 1 && len(p.Allowed) > 0 && !slices.ContainsFunc(p.Allowed, isGroup) && len(p.Allowed) < p.Approvers {
		return fmt.Errorf("approvers: %d distinct approvers needed, but only %d principals are allowed", p.Approvers, len(p.Allowed))
	}
	return nil
}

func isGroup(a string) bool { return strings.HasPrefix(a, GroupPrefix) }

func (p Policy) approvers() int { return max(p.Approvers, 1) }

// permits reports whether who may approve under p.
func (p Policy) permits(who Principal) bool {
	if len(p.Allowed) == 0 {
		return true
	}
	for _, a := range p.Allowed {
		if g, ok := strings.CutPrefix(a, GroupPrefix); ok {
			if slices.Contains(who.Groups, g) {
				return true
			}
		} else if a == who.Name || a == who.ID || who.ID != "" && SSHIdentity(a) == who.ID {
			return true
		}
	}
	return false
}

// Admit decides whether who's approval counts at a gate under p, given
// the rollout's starter ("" when the start was not signed: four eyes then
// refuses) and the persons who approved the gate so far (Principal.Name,
// never a typed name). A refusal is a *Refusal.
func (p Policy) Admit(who Principal, starter string, sofar []string) error {
	switch {
	case !p.permits(who):
		return refuse(ReasonNotAllowed, "%s may not approve this stage: it needs one of %s", who.Name, strings.Join(p.Allowed, ", "))
	case p.FourEyes && starter == "":
		return refuse(ReasonFourEyes, "this stage needs four eyes and the rollout's start was not verified, so no one can tell who started it: start it signed")
	case p.FourEyes && who.Name == starter:
		return refuse(ReasonFourEyes, "%s started this rollout and may not approve it (four eyes): someone else must", who.Name)
	case slices.Contains(sofar, who.Name):
		return refuse(ReasonAlreadyApproved, "%s approved this gate already: it needs distinct approvers", who.Name)
	}
	return nil
}

// Needed is what a gate still needs.
type Needed struct {
	// Approvers is how many more distinct approvals open the gate (0: open).
	Approvers int `json:"approvers"`
	// From lists who may give them (empty: any allowed signer).
	From []string `json:"from,omitempty"`
	// Not lists who may not: the approvers so far, and the starter under
	// four eyes.
	Not []string `json:"not,omitempty"`
}

// StillNeeded computes what the gate needs under p after the approvals
// of sofar (principals, as Admit accepted them). Pure: the workflow
// shows it at the gate.
func (p Policy) StillNeeded(starter string, sofar []string) Needed {
	n := Needed{Approvers: max(p.approvers()-len(sofar), 0), From: p.Allowed}
	if n.Approvers == 0 {
		return Needed{}
	}
	n.Not = slices.Clone(sofar)
	if p.FourEyes && starter != "" && !slices.Contains(n.Not, starter) {
		n.Not = append(n.Not, starter)
	}
	return n
}

// Open reports whether the gate may open.
func (n Needed) Open() bool { return n.Approvers == 0 }

// String says it as the gate shows it: "2 more approvals, from
// group:sp-admins, not by alice".
func (n Needed) String() string {
	if n.Open() {
		return "no more approvals needed"
	}
	s := "1 more approval"
	if n.Approvers > 1 {
		s = fmt.Sprintf("%d more approvals", n.Approvers)
	}
	if len(n.From) > 0 {
		s += " from " + strings.Join(n.From, ", ")
	}
	if len(n.Not) > 0 {
		s += ", not by " + strings.Join(n.Not, " or ")
	}
	return s
}

// History is what the ledger knows when an approval arrives.
type History interface {
	// Used says what replayKey approved before (nil: never used).
	Used(ctx context.Context, replayKey string) (*Use, error)
	// Approvers lists the principals who approved gate so far.
	Approvers(ctx context.Context, gate Gate) ([]string, error)
	// Recorded is the approval the ledger holds at gate whose statement
	// is exactly payload (nil: none), with when it was recorded
	// (Verified.RecordedAt).
	Recorded(ctx context.Context, gate Gate, payload string) (*Verified, error)
	// Expose marks a statement whose ID token was seen in plain text
	// (key: ExposedKey); Exposed says whether one was.
	Expose(ctx context.Context, gate Gate, key string) error
	Exposed(ctx context.Context, key string) (bool, error)
}

// Use is what a replay key approved: Payload is the statement as signed.
type Use struct{ Rollout, Stage, Principal, Payload string }

// Check is the whole decision on one signed approval at a gate: Verify
// (its freshness and namespace only when the ledger has not recorded it
// for this gate),
// then replay (the ledger's History), then the Policy given the rollout's
// starter and the approvers so far. It returns the verified approval and
// what the gate needs once it counts. retry says the same approval was
// recorded for this gate before (an activity retried after its write):
// it counts once and must not be recorded again.
func (k *Keyring) Check(ctx context.Context, s Signed, gate Gate, p Policy, starter string, h History) (v Verified, needed Needed, retry bool, err error) {
	if k, err = k.current(); err != nil {
		return Verified{}, Needed{}, false, err
	}
	if s.IDToken != "" {
		return Verified{}, Needed{}, false, k.refuseRawToken(ctx, s, gate, h)
	}
	if r, err := k.recordedStart(ctx, s, gate, h); err != nil {
		return Verified{}, Needed{}, false, err
	} else if r != nil {
		return *r, Needed{}, true, nil
	}
	if v, err = k.verifyProof(ctx, s, gate); err != nil {
		return Verified{}, Needed{}, false, err
	}
	use, err := h.Used(ctx, v.ReplayKey)
	if err != nil {
		return Verified{}, Needed{}, false, err
	}
	sofar, err := h.Approvers(ctx, gate)
	if err != nil {
		return Verified{}, Needed{}, false, err
	}
	if use != nil {
		// A retry sends the same bytes: the same nonce over another
		// statement (another plan) is a replay, never a retry.
		if *use != (Use{Rollout: gate.Rollout, Stage: gate.Stage, Principal: v.Principal.Name, Payload: v.Payload}) {
			return Verified{}, Needed{}, false, refuse(ReasonReplayed, "this signed approval (by %s) was used before: sign a new one", v.Principal.Name)
		}
		if err := k.trustRecorded(ctx, v, gate, h); err != nil {
			return Verified{}, Needed{}, false, err
		}
		return v, p.StillNeeded(starter, sofar), true, nil
	}
	// Only now its age: a statement this run recorded (a reset run
	// verifying its start again) was fresh when it was first seen.
	if err := checkNamespace(v.Statement, gate); err != nil {
		return Verified{}, Needed{}, false, err
	}
	if err := refuseExposed(ctx, v, h); err != nil {
		return Verified{}, Needed{}, false, err
	}
	if err := k.fresh(v); err != nil {
		return Verified{}, Needed{}, false, err
	}
	if p.FourEyes || p.approvers() > 1 {
		// Comparing persons needs them known: an identity the people file
		// does not name could be anyone, the starter or an approver.
		if _, ok := k.person(v.Principal.ID); !ok {
			return Verified{}, Needed{}, false, refuse(ReasonUnknownPerson, "%s is not in the worker's people file (--approval-people), so four eyes and distinct approvers cannot tell who it is", v.Principal.ID)
		}
		if p.FourEyes && starter != "" {
			if _, known := k.SamePerson(starter, v.Principal); !known {
				return Verified{}, Needed{}, false, refuse(ReasonUnknownPerson, "the rollout's starter %s is not in the worker's people file (--approval-people), or not an identity %s can be compared with: four eyes cannot tell who started it", starter, v.Principal.ID)
			}
			starter, _ = k.recordedPerson(starter)
		}
	}
	if err := p.Admit(v.Principal, starter, sofar); err != nil {
		return Verified{}, Needed{}, false, err
	}
	return v, p.StillNeeded(starter, append(slices.Clone(sofar), v.Principal.Name)), false, nil
}
