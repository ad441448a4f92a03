package rollout

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The history keeps the update's bytes, not the Approval they decode to:
// a raw token under a repeated key, another case, another name or
// another level must be refused by the validator all the same.
func TestApproveValidatorRefusesARawTokenHiddenInTheUpdateBytes(t *testing.T) {
	const raw = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2aWN0aW0ifQ.c2lnbmF0dXJl"
	g := &approvalGate{in: &RolloutInput{Name: "q3"}, stage: "canary"}
	for name, body := range map[string]string{
		"duplicate key": `{"by":"dana","reason":"ok","stage":"canary","signed":{"payload":"{}","idToken":"` + raw + `","idToken":""}}`,
		"other case":    `{"by":"dana","reason":"ok","stage":"canary","signed":{"payload":"{}","IDTOKEN":"` + raw + `","idToken":""}}`,
		"snake case":    `{"by":"dana","reason":"ok","stage":"canary","signed":{"payload":"{}","id_token":"` + raw + `"}}`,
		"top level":     `{"by":"dana","reason":"ok","stage":"canary","idToken":"` + raw + `"}`,
		"escaped":       `{"by":"dana","reason":"ok","stage":"canary","signed":{"payload":"{}","id_token":"\u0065yJ` + raw[3:] + `"}}`,
		"in the reason": `{"by":"dana","reason":"` + raw + `","stage":"canary"}`,
	} {
		t.Run(name, func(t *testing.T) {
			p, err := converter.GetDefaultDataConverter().ToPayload(json.RawMessage(body))
			require.NoError(t, err)
			require.Contains(t, string(p.Data), raw[10:], "what the history would keep")
			var got json.RawMessage
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &got))
			require.Error(t, g.validate(got))
		})
	}
}

// What `starter approve` sends (a sealed token, the statement inside)
// decodes strictly as it did.
func TestApproveStrictDecodingTakesTheStartersApproval(t *testing.T) {
	st := `{"rollout":"fleetsaga/rollout/plan/q3","stage":"canary","nonce":"n1","reason":"ok"}`
	ap := workflows.Approval{By: "dana", Reason: "ok", Stage: "canary", PlanDigest: strings.Repeat("ab", 32),
		Signed: &approval.Signed{Payload: st, SealedIDToken: "q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4k="}}
	b, err := json.Marshal(ap)
	require.NoError(t, err)
	got, err := decodeApprovalStrict(b)
	require.NoError(t, err)
	require.Equal(t, ap, got)
}
