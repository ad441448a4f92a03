// Package version compares the versions the update kinds read, each kind
// by its own rule: the services they come from write versions differently,
// so one reading for all would misorder some (4.9.0 < 4.16.0 numerically,
// a suffix that is or is not a field).
package version

import (
	"slices"
	"strconv"
	"strings"
)

// Rule reads any string as a version: it cuts it into fields and compares
// two fields (a missing field is "").
type Rule struct {
	split func(v string) []string
	field func(x, y string) int
}

// Compare compares a and b field by field under rule: -1, 0 or 1.
func Compare(a, b string, rule Rule) int {
	as, bs := rule.split(a), rule.split(b)
	for i := range max(len(as), len(bs)) {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if c := rule.field(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// MGS is the SP firmware's and host flash's rule (caboose and phase 1
// versions): fields between '.', '-' and '+'; two unsigned numbers compare
// as numbers ("1.10.0" > "1.9.2"), a missing field is less than any
// ("1.0" < "1.0.0"), anything else compares as text.
var MGS = Rule{
	split: func(v string) []string {
		return strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '-' || r == '+' })
	},
	field: func(x, y string) int {
		xn, xerr := strconv.ParseUint(x, 10, 64)
		yn, yerr := strconv.ParseUint(y, 10, 64)
		switch {
		case x == y:
			return 0
		case xerr == nil && yerr == nil:
			if xn < yn {
				return -1
			}
			return 1
		case x == "":
			return -1
		case y == "":
			return 1
		case x < y:
			return -1
		default:
			return 1
		}
	},
}

// Strict reads only versions of one shape, as numbers; it refuses any
// other string with an error that says which shape it wants.
type Strict struct {
	parse func(v string) ([]int, error)
}

// Parse reads v under rule.
func Parse(v string, rule Strict) ([]int, error) { return rule.parse(v) }

// CompareStrict compares a and b under rule, number by number: -1, 0 or
// 1, or the error of the first that rule does not read.
func CompareStrict(a, b string, rule Strict) (int, error) {
	av, err := rule.parse(a)
	if err != nil {
		return 0, err
	}
	bv, err := rule.parse(b)
	if err != nil {
		return 0, err
	}
	return slices.Compare(av, bv), nil
}
