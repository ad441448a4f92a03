package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// What Temporal answers decides the exit code: access refused is 8, a
// request the server calls invalid is 2, only an unreachable server is 4;
// the line says what went wrong with the server's own words, on one line.
func TestTemporalErrorsExitWithWhatWentWrong(t *testing.T) {
	a := &app{temporal: config.Temporal{Address: "temporal.example:7233", Namespace: "fleet", APIKey: "sekret-key"}}
	for _, c := range []struct {
		name string
		err  error
		code int
		line string
	}{
		{"permission denied", serviceerror.NewPermissionDenied("Request unauthorized.", ""), exitUnauthorised,
			"start fleetsaga/rollout/plan/q3: Temporal at temporal.example:7233 refused access to namespace fleet (Request unauthorized.): check the client certificate, API key or --temporal-api-key-file token and its permissions on the namespace"},
		{"unauthenticated, as gRPC returns it", serviceerror.FromStatus(status.New(codes.Unauthenticated, "invalid API key")), exitUnauthorised,
			"start fleetsaga/rollout/plan/q3: Temporal at temporal.example:7233 refused access to namespace fleet (invalid API key): check the client certificate, API key or --temporal-api-key-file token and its permissions on the namespace"},
		{"invalid argument", serviceerror.NewInvalidArgument("WorkflowId length exceeds limit."), exitUsage,
			"start fleetsaga/rollout/plan/q3: Temporal refused the request as invalid: WorkflowId length exceeds limit."},
		{"namespace not found", serviceerror.NewNamespaceNotFound("fleet"), exitUsage,
			"start fleetsaga/rollout/plan/q3: Temporal refused the request as invalid: Namespace fleet is not found."},
		{"failed precondition", serviceerror.NewFailedPrecondition("Namespace is not active in this cluster."), exitFailed,
			"start fleetsaga/rollout/plan/q3: Temporal refused it: Namespace is not active in this cluster."},
		{"unavailable", serviceerror.NewUnavailable("connection refused"), exitUnreachable,
			"start fleetsaga/rollout/plan/q3: Temporal at temporal.example:7233 is unreachable: connection refused"},
		{"server deadline", serviceerror.NewDeadlineExceeded("context deadline exceeded"), exitUnreachable,
			"start fleetsaga/rollout/plan/q3: Temporal at temporal.example:7233 is unreachable: context deadline exceeded"},
		{"our deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), exitUnreachable,
			"start fleetsaga/rollout/plan/q3: Temporal at temporal.example:7233 is unreachable: list: context deadline exceeded"},
		{"wrapped", fmt.Errorf("describe: %w", serviceerror.NewPermissionDenied("no", "")), exitUnauthorised, ""},
		{"rate limited", serviceerror.NewResourceExhausted(0, "namespace rate limit exceeded"), exitFailed,
			"start fleetsaga/rollout/plan/q3: Temporal refused it: namespace rate limit exceeded"},
		{"internal", serviceerror.NewInternal("shard\nstatus unknown"), exitFailed,
			"start fleetsaga/rollout/plan/q3: Temporal refused it: shard status unknown"},
		{"a workflow's refusal", temporal.NewApplicationError("the approval names no plan", "Refused"), exitFailed,
			"start fleetsaga/rollout/plan/q3: the approval names no plan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.code, temporalExit(c.err))
			err := a.temporalErr("start fleetsaga/rollout/plan/q3", c.err)
			var ee *exitError
			if assert.True(t, errors.As(err, &ee)) {
				assert.Equal(t, c.code, ee.code)
			}
			if c.line != "" {
				assert.Equal(t, c.line, err.Error())
			}
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.NotContains(t, err.Error(), "sekret", "never a secret")
		})
	}
	// An error that already carries its exit code keeps it.
	refused := &exitError{exitRefused, errors.New("target sp/sled/1 is busy")}
	assert.Same(t, refused, a.temporalErr("start", refused))
	assert.Equal(t, exitRefused, temporalExit(refused))
}

// The real binary against a real server: a namespace that does not exist
// is the operator's input to fix (exit 2, the server's words), not an
// unreachable Temporal (it answered) nor a failed update.
func TestUnknownNamespaceExits2NotUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	env := testenv.New(t)
	vars := []string{"TEMPORAL_ADDRESS=" + env.TemporalAddress(), "TEMPORAL_NAMESPACE=no-such-namespace"}
	for _, args := range [][]string{
		{"list"},
		{"status", "fleetsaga/rollout/plan/q3"},
		{"cancel", "fleetsaga/rollout/plan/q3"},
		{"approve", "fleetsaga/rollout/plan/q3", "--by", "alice", "--reason", "r"},
	} {
		r := runStarter(t, vars, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "Temporal refused the request as invalid: Namespace no-such-namespace is not found.", args)
		assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	}
}
