package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
)

// faultsQueryTimeout bounds the one read of a running fleetsim.
const faultsQueryTimeout = 10 * time.Second

// newFaults prints what a running fleetsim's faults did: the demo's
// summary says which faults it went through.
func newFaults() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:     "faults",
		Short:   "Print the faults a running fleetsim fired (spent ones included)",
		Example: "  fleetsim faults --url $FLEETSIM_URL",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				return usageError{errors.New("--url (or FLEETSIM_URL) is required")}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), faultsQueryTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/faults/fired", nil)
			if err != nil {
				return usageError{err}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("ask fleetsim: %w", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("ask fleetsim: %s", resp.Status)
			}
			var fs []faults.Fault
			if err := json.NewDecoder(resp.Body).Decode(&fs); err != nil {
				return fmt.Errorf("fleetsim's answer: %w", err)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FAULT\tTARGET\tFIRED")
			for _, f := range fs {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", f.Kind, f.Target, f.Fired)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&url, "url", os.Getenv("FLEETSIM_URL"), "fleetsim's URL (env FLEETSIM_URL)")
	return cmd
}
