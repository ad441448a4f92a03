package docscheck

import (
	"strings"
	"testing"
)

// The checks catch what they are for, and let pass what is fine, on
// made-up comments and docs against this repository's tree.
func TestRulesCatchWhatTheyAreFor(t *testing.T) {
	r := loadRepo(t)
	comments := []struct {
		text string
		bad  bool
	}{
		{"see kinds/catalogue.go and docs/KINDS.md", false},
		{"see kinds/no_such_file.go", true},
		{"see docs/NO_SUCH.md", true},
		{"the driver (driver.go) and its waits (wait.go)", false},
		{"the driver (mgs_driver.go)", true},
		{"omicron's schema/crdb/dbinit.sql, nexus/src/app/sagas/mod.rs", false},
		{"the MCO's pkg/controller/machine-set-boot-image/ controller", false},
		{"a gate (issue 30)", true},
		{"fixed in #30", true},
		{"omicron#1234 is theirs", false},
		{"a gate (issue\n// 30)", true},
		{"the rule (DOMAIN.md §I)", true},
		{"the rule (§H)", true},
		{"the rule (docs/CONFORMANCE.md §I)", false},
		{"the rules (docs/CONFORMANCE.md §D and §H)", false},
		{"the rule (docs/CONFORMANCE.md §Z)", true},
	}
	for _, c := range comments {
		got := r.checkCommentGroup("kinds/mgsupdate/contract.go", 1, strings.Split("// "+c.text, "\n"))
		if c.bad != (len(got) > 0) {
			t.Errorf("comment %q: findings %v, want bad=%v", c.text, got, c.bad)
		}
	}
	long := strings.Repeat("word ", 70)
	docs := []struct {
		text string
		bad  bool
	}{
		{"short prose, a [link](KINDS.md) and `kinds/catalogue.go`", false},
		{long, true},
		{"```\n" + long + "\n```", false},
		{"| a | `" + long + "` |", false},
		{"| a | " + long + " |", true},
		{"a [broken link](NO_SUCH.md)", true},
		{"a [web link](https://temporal.io) and [a heading](#two-commands)", false},
		{"names `kinds/no_such_file.go`", true},
		{"names `sp/sled/N` and `dc/vm-agent`, targets not files", false},
	}
	for _, d := range docs {
		got := r.checkDoc("docs/X.md", d.text)
		if d.bad != (len(got) > 0) {
			t.Errorf("doc %.60q: findings %v, want bad=%v", d.text, got, d.bad)
		}
	}
}
