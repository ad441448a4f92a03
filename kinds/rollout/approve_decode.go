package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The approve update's argument is taken as the bytes the client sent,
// since those bytes, not the Approval they decode to, are what the
// history keeps: encoding/json matches keys in any case, keeps the last
// of two equal keys and skips unknown ones, so an Approval that looks
// unsigned may come in bytes that hold a raw ID token. The validator
// reads them strictly (decodeApprovalStrict); the handler decodes as
// before, so recorded histories replay as they were.

// jwtShape is a JWS or JWE in compact form: a base64url JSON header
// ("eyJ" is `{"`) and at least two more dot-separated parts.
var jwtShape = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.`)

// errRawTokenBytes refuses an update whose bytes hold a JWT.
var errRawTokenBytes = temporal.NewNonRetryableApplicationError(approval.ErrRawIDToken.Error(), failure.ApprovalRefused, nil, string(approval.ReasonUnsealedToken))

// decodeApproval is the handler's decoding, the SDK's until the
// argument was taken as bytes.
func decodeApproval(raw json.RawMessage) (workflows.Approval, error) {
	var ap workflows.Approval
	// Decoding depends on the bytes alone (workflowcheck flags the
	// reflection it uses), as the SDK's own decoding of the argument did.
	//workflowcheck:ignore
	err := json.Unmarshal(raw, &ap)
	return ap, err
}

// decodeApprovalStrict refuses bytes that hold a JWT anywhere (a key, a
// value, the statement inside), a key twice or in another case than the
// Approval's, or a key it does not know; else it decodes them.
func decodeApprovalStrict(raw json.RawMessage) (workflows.Approval, error) {
	var ap workflows.Approval
	if jwtShape.Match(raw) {
		return ap, errRawTokenBytes
	}
	if err := checkKeys(raw, approvalKeys, map[string]map[string]bool{"signed": signedKeys}); err != nil {
		return ap, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&ap); err != nil {
		return ap, fmt.Errorf("the approval does not decode: %w", err)
	}
	if s := ap.Signed; s != nil && strings.HasPrefix(strings.TrimSpace(s.Payload), "{") {
		if err := checkKeys([]byte(s.Payload), nil, nil); err != nil {
			return ap, err
		}
	}
	return ap, nil
}

var (
	approvalKeys = jsonKeys(reflect.TypeFor[workflows.Approval]())
	signedKeys   = jsonKeys(reflect.TypeFor[approval.Signed]())
)

func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	return keys
}

// checkKeys walks one JSON value: no string (decoded) is JWT-shaped, no
// object has a key twice in any case, and where known (nil: any) the
// top object's keys, and those of its objects named in inner, are exact.
func checkKeys(raw []byte, known map[string]bool, inner map[string]map[string]bool) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return walkValue(d, known, inner)
}

func walkValue(d *json.Decoder, known map[string]bool, inner map[string]map[string]bool) error {
	tok, err := d.Token()
	if err != nil {
		return fmt.Errorf("the approval does not decode: %w", err)
	}
	switch t := tok.(type) {
	case string:
		if jwtShape.MatchString(t) {
			return errRawTokenBytes
		}
	case json.Delim:
		switch t {
		case '[':
			for d.More() {
				if err := walkValue(d, nil, nil); err != nil {
					return err
				}
			}
		case '{':
			var seen []string
			for d.More() {
				k, err := d.Token()
				key, ok := k.(string)
				if err != nil || !ok {
					return errors.New("the approval does not decode: a key that is not a string")
				}
				if jwtShape.MatchString(key) {
					return errRawTokenBytes
				}
				for _, s := range seen {
					if strings.EqualFold(s, key) {
						return fmt.Errorf("the approval names %q twice (in any case): send each field once", key)
					}
				}
				if known != nil && !known[key] {
					return fmt.Errorf("the approval has a field %q it does not know (field names are exact)", key)
				}
				seen = append(seen, key)
				if err := walkValue(d, inner[key], nil); err != nil {
					return err
				}
			}
		}
		if t == '[' || t == '{' {
			if _, err := d.Token(); err != nil { // the closing delimiter
				return fmt.Errorf("the approval does not decode: %w", err)
			}
		}
	}
	return nil
}
