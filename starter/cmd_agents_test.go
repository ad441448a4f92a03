package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Invalid agent requests exit 2 before contacting anything (no Temporal
// address is reachable here: a contact would exit 4).
func TestAgentCommandsRejectBadInputWithExit2(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	for _, args := range [][]string{
		{"agent-install", "--all"},
		{"agent-install", "--agent", "vm-agent"},
		{"agent-install", "--agent", "vm-agent", "--all", "--servers", "cn1"},
		{"agent-install", "--agent", "vm-agent=not-a-uuid", "--all"},
		{"agent-install", "--agent", "=x", "--all"},
		{"agent-install", "--agent", "vm-agent", "--trait", "rack"},
		{"agent-install", "--agent", "vm-agent", "--all", "--concurrency", "-3"},
		{"agent-install", "--agent", "vm-agent", "--all", "--max-failures", "2", "--max-failure-percent", "5"},
		{"agent-install", "--agent", "vm-agent", "--all", "--straggler-factor", "1"},
		{"agent-drift"},
		{"agent-drift", "--all", "--agent", "a,a"},
		{"agent-drift", "--all", "extra-arg"},
	} {
		assert.Equal(t, exitUsage, run(args), "%v", args)
	}
	assert.Equal(t, exitOK, run([]string{"agent-install", "--help"}))
	assert.Equal(t, exitOK, run([]string{"agent-drift", "--help"}))
}
