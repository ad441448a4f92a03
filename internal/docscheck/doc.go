// Package docscheck holds the test that keeps the repository's pointers
// resolving: comments and docs name files that exist, cite no notes
// outside the repository and no issue numbers, and docs stay readable
// (short lines, working links). It has no code of its own.
package docscheck
