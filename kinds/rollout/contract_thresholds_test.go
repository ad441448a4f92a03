package rollout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
)

// A failed update counts against its class's threshold: an MGS refusal
// with its code ("MGSRejected:InvalidSp") is refused, like the bare type,
// and keeps its full type for the operator.
func TestClassifyReadsTheCatalogue(t *testing.T) {
	app := func(typ string) error {
		return fmt.Errorf("child: %w", temporal.NewNonRetryableApplicationError("x", typ, nil))
	}
	for _, c := range []struct {
		err   error
		typ   string
		class FailureClass
	}{
		{app(failure.WithCode(failure.MGSRejected, "InvalidSp")), "MGSRejected:InvalidSp", ClassRefused},
		{app(failure.WithCode(failure.TritonAPI, "ResourceNotFound")), "TritonAPI:ResourceNotFound", ClassRefused},
		{app(failure.HostBootTimeout), failure.HostBootTimeout, ClassTimeout},
		{app(failure.WrongActiveVersion), failure.WrongActiveVersion, ClassVerification},
		{app(failure.InvalidInput), failure.InvalidInput, ClassOther},
		{temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), "Timeout", ClassTimeout},
		{fmt.Errorf("plain"), "", ClassOther},
	} {
		typ, class := classify(c.err)
		assert.Equal(t, c.typ, typ)
		assert.Equal(t, c.class, class, c.typ)
	}
}
