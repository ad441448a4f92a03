package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// prompt is where starter approve asks the approver to confirm a plan
// they did not name with --plan-digest: only a terminal (a person reading
// the plan); a script's stdin never confirms.
type prompt struct {
	terminal bool
	in       io.Reader
	out      io.Writer
}

// approvePrompt is stdin and stderr (tests replace it).
var approvePrompt = func() prompt {
	fd := os.Stdin.Fd()
	return prompt{terminal: isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd), in: os.Stdin, out: os.Stderr}
}

// confirmLen is how much of the digest the approver types back: enough
// that the answer is read off the plan shown, not a reflex "y".
const confirmLen = 12

// confirmGatePlan shows sp (its rows, its full digest and what the digest
// binds) and asks the approver to type the digest's first characters
// back. It answers whether they did. The approval then signs that digest:
// if the gate shows another plan when it arrives, the workflow refuses it.
func (p prompt) confirmGatePlan(id string, sp rollout.StagePlan) bool {
	fmt.Fprintf(p.out, "%s waits at the gate of stage %s. The plan you approve:\n", id, sp.Stage)
	printStagePlan(p.out, sp)
	fmt.Fprintf(p.out, "\nApprove plan %s of stage %s? Type its first %d characters to approve, anything else to stop: ", sp.Digest, sp.Stage, confirmLen)
	line, _ := bufio.NewReader(p.in).ReadString('\n')
	return len(sp.Digest) >= confirmLen && strings.TrimSpace(line) == sp.Digest[:confirmLen]
}
