// Package schema holds the ledger's numbered SQL migrations (NNNN_name.sql),
// embedded so every binary carries the schema it expects.
package schema

import "embed"

// FS holds the migrations.
//
//go:embed *.sql
var FS embed.FS
