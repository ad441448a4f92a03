// Package health judges a health check's readings: pass, fail or
// inconclusive, with one reason. It is pure (no I/O, no Temporal), so the
// activity that reads Prometheus, the workflow that counts verdicts and the
// plan's validation share one meaning.
package health

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Verdict is a check's outcome.
type Verdict string

const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	// Inconclusive: nothing to judge (no data, the monitor did not answer).
	Inconclusive Verdict = "inconclusive"
)

// Condition is what every reading must satisfy to pass, e.g. "== 1" or
// "< 0.05".
type Condition struct {
	Op        string  `json:"op"`
	Threshold float64 `json:"threshold"`
}

var ops = []string{"==", "!=", "<=", ">=", "<", ">"}

// ParseCondition reads "<op> <number>" (op one of == != < <= > >=).
func ParseCondition(s string) (Condition, error) {
	s = strings.TrimSpace(s)
	for _, op := range ops {
		if rest, ok := strings.CutPrefix(s, op); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return Condition{}, fmt.Errorf("condition %q: %q is not a number", s, strings.TrimSpace(rest))
			}
			return Condition{Op: op, Threshold: v}, nil
		}
	}
	return Condition{}, fmt.Errorf("condition %q: want an operator (%s) and a number, e.g. \"== 1\"", s, strings.Join(ops, " "))
}

// Holds reports whether v satisfies c.
func (c Condition) Holds(v float64) bool {
	switch c.Op {
	case "==":
		return v == c.Threshold
	case "!=":
		return v != c.Threshold
	case "<":
		return v < c.Threshold
	case "<=":
		return v <= c.Threshold
	case ">":
		return v > c.Threshold
	case ">=":
		return v >= c.Threshold
	}
	return false
}

func (c Condition) String() string { return c.Op + " " + strconv.FormatFloat(c.Threshold, 'g', -1, 64) }

// Sample is one reading: a series (its labels, as Prometheus prints them)
// and its value.
type Sample struct {
	Series string  `json:"series"`
	Value  float64 `json:"value"`
}

// Result is a judged check.
type Result struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Failing are the readings that broke the condition (at most
	// maxFailing, worst first).
	Failing []Sample `json:"failing,omitempty"`
}

// maxFailing keeps a result small enough for the ledger and the Web UI.
const maxFailing = 5

// Judge: every reading must satisfy c. No reading is inconclusive: a query
// that matches nothing proves nothing.
func Judge(c Condition, samples []Sample) Result {
	if len(samples) == 0 {
		return Result{Verdict: Inconclusive, Reason: "no data"}
	}
	var failing []Sample
	for _, s := range samples {
		if !c.Holds(s.Value) {
			failing = append(failing, s)
		}
	}
	if len(failing) == 0 {
		return Result{Verdict: Pass, Reason: fmt.Sprintf("%d of %d readings %s", len(samples), len(samples), c)}
	}
	sort.SliceStable(failing, func(i, j int) bool { return failing[i].Series < failing[j].Series })
	r := Result{Verdict: Fail, Reason: fmt.Sprintf("%d of %d readings not %s, e.g. %s = %g",
		len(failing), len(samples), c, failing[0].Series, failing[0].Value)}
	if len(failing) > maxFailing {
		failing = failing[:maxFailing]
	}
	r.Failing = failing
	return r
}

// ErrNoCheck is a check with neither a query nor a URL.
var ErrNoCheck = errors.New("a health check needs a query (Prometheus) or a url (HTTP)")
