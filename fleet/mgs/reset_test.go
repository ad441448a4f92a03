package mgs

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Only an answer that certainly did not reach the SP lets a reset move to
// the other MGS.
func TestResetNotSent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Err: errors.New("connection reset")}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&Error{Status: 400, ResetState: resetStateLocalSled}, true},
		{&Error{Status: 0, Err: dial}, true},
		{&Error{Status: 503, Code: "SpAddressUnknown"}, true},
		{&Error{Status: 503, Code: "ServiceUnavailable"}, true},
		{&Error{Status: 0, Err: read}, false},
		{&Error{Status: 503, Code: CodeSpCommunicationFailed}, false},
		{&Error{Status: 503, Code: "Timeout "}, false},
		{&Error{Status: 500}, false},
		{errors.New("not an MGS error"), false},
	} {
		assert.Equal(t, c.want, ResetNotSent(c.err), "%+v", c.err)
	}
}
