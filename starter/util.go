package main

import (
	"encoding/json"

	"github.com/spf13/cobra"
)

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageErr("%s: %v", cmd.CommandPath(), err)
		}
		return nil
	}
}
