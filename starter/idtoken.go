package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/approval"
)

// idTokenCommandTimeout bounds the --id-token-command: long enough for a
// login in a browser, short enough that a hung helper does not keep the
// statement (and its time) waiting past the worker's max age.
const idTokenCommandTimeout = 5 * time.Minute

// idTokenFor runs the operator's --id-token-command to get an ID token
// bound to st: the command is run by sh with the statement's digest in
// approval.IDTokenNonceEnv, which it asks the identity provider to put
// in the token's nonce, and prints the token on stdout. Its stderr is the
// operator's (a login prompt); its stdout is never shown, not even in an
// error: it is a bearer credential.
func idTokenFor(ctx context.Context, command string, st approval.Statement) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, idTokenCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), approval.IDTokenNonceEnv+"="+approval.StatementDigest(st))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, os.Stderr, os.Stdin
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("--id-token-command did not print a token within %s", idTokenCommandTimeout)
		}
		return "", fmt.Errorf("--id-token-command failed (%v): nothing was signed", err)
	}
	tok := strings.TrimSpace(out.String())
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \t\n") {
		return "", usageErr("--id-token-command printed no JWT (want one header.payload.signature line on stdout)")
	}
	return tok, nil
}

// errIDTokenFile: a token read from a file was issued before the
// statement existed, so its nonce cannot be the statement's digest and
// the worker refuses it.
var errIDTokenFile = usageErr("--id-token FILE is no longer accepted: a token read from a file is not bound to the approval. " +
	"Give --id-token-command CMD: it is run with " + approval.IDTokenNonceEnv + " set to the statement's digest, " +
	"asks your identity provider for a token with that nonce, and prints it")
