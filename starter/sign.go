package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/fleetsaga/fleetsaga/approval"
)

// signFlags choose how the operator signs what they approve or start:
// an SSH key (a private key file, or a public key file naming the
// ssh-agent key to use, as git's user.signingKey does), the only key in
// ssh-agent, or an OIDC ID token bound to the statement, from a command.
type signFlags struct {
	key        string
	idToken    string // refused: see errIDTokenFile
	idTokenCmd string
	tokenPub   string // the workers' token-sealing public key file
}

func (f *signFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.key, "sign-key", os.Getenv("FLEETSAGA_SIGN_KEY"), "SSH key to sign with: an unencrypted private key file, or a public key file whose key ssh-agent holds (default: ssh-agent's only key) (env FLEETSAGA_SIGN_KEY)")
	cmd.Flags().StringVar(&f.idTokenCmd, "id-token-command", os.Getenv("FLEETSAGA_ID_TOKEN_COMMAND"), "command (run by sh) that prints an OIDC ID token whose nonce is $"+approval.IDTokenNonceEnv+", the statement's digest, to present instead of an SSH signature (env FLEETSAGA_ID_TOKEN_COMMAND)")
	cmd.Flags().StringVar(&f.tokenPub, "approval-token-public-key", os.Getenv("FLEETSAGA_APPROVAL_TOKEN_PUBLIC_KEY"), "the workers' token-sealing public key file (PEM): the ID token of --id-token-command is sealed to it, so Temporal's history holds no token (env FLEETSAGA_APPROVAL_TOKEN_PUBLIC_KEY)")
	cmd.Flags().StringVar(&f.idToken, "id-token", "", "no longer accepted: a token from a file binds no approval; see --id-token-command")
	_ = cmd.Flags().MarkHidden("id-token")
}

// errNoSigner: neither a key nor a token is at hand; the statement goes
// unsigned and the worker decides.
var errNoSigner = errors.New("no signing key: give --sign-key or --id-token-command, or load a key into ssh-agent")

// sign signs st; errNoSigner when there is nothing to sign with.
// The statement is made first, so an ID token can be asked for with its
// digest as the nonce: only such a token binds it.
func (f signFlags) sign(ctx context.Context, st approval.Statement) (approval.Signed, error) {
	if f.idToken != "" {
		return approval.Signed{}, errIDTokenFile
	}
	if f.idTokenCmd != "" {
		if f.key != "" {
			return approval.Signed{}, usageErr("--sign-key and --id-token-command: give one")
		}
		if f.tokenPub == "" { // before the command: no token to throw away
			return approval.Signed{}, usageErr("%v", approval.ErrNoTokenPublicKey)
		}
		pub, err := approval.LoadTokenPublicKey(f.tokenPub)
		if err != nil {
			return approval.Signed{}, usageErr("--approval-token-public-key: %v", err)
		}
		tok, err := idTokenFor(ctx, f.idTokenCmd, st)
		if err != nil {
			return approval.Signed{}, err
		}
		return approval.SealIDToken(st, tok, pub)
	}
	signer, err := f.signer()
	if err != nil {
		return approval.Signed{}, err
	}
	return approval.SignSSH(st, signer)
}

func (f signFlags) signer() (ssh.Signer, error) {
	var want ssh.PublicKey
	if f.key != "" {
		b, err := os.ReadFile(f.key)
		if err != nil {
			return nil, usageErr("--sign-key: %v", err)
		}
		if pub, _, _, _, err := ssh.ParseAuthorizedKey(b); err == nil {
			want = pub // a public key: its private half is in ssh-agent
		} else {
			s, err := ssh.ParsePrivateKey(b)
			var pp *ssh.PassphraseMissingError
			if errors.As(err, &pp) {
				return nil, usageErr("--sign-key %s is encrypted: load it into ssh-agent (ssh-add) and give its .pub file", f.key)
			}
			if err != nil {
				return nil, usageErr("--sign-key %s: not an SSH private or public key", f.key)
			}
			return s, nil
		}
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		if want != nil {
			return nil, usageErr("--sign-key %s is a public key, but no ssh-agent is running (SSH_AUTH_SOCK)", f.key)
		}
		return nil, errNoSigner
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("ssh-agent: %v", err)
	}
	// The connection lives as long as the starter: one signature.
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		return nil, fmt.Errorf("ssh-agent: %v", err)
	}
	if want != nil {
		for _, s := range signers {
			if ssh.FingerprintSHA256(s.PublicKey()) == ssh.FingerprintSHA256(want) {
				return s, nil
			}
		}
		return nil, usageErr("ssh-agent does not hold the key of --sign-key %s (%s): ssh-add it", f.key, ssh.FingerprintSHA256(want))
	}
	switch len(signers) {
	case 0:
		return nil, errNoSigner
	case 1:
		return signers[0], nil
	}
	var fps []string
	for _, s := range signers {
		fps = append(fps, ssh.FingerprintSHA256(s.PublicKey()))
	}
	return nil, usageErr("ssh-agent holds %d keys (%s): choose one with --sign-key KEY.pub", len(signers), strings.Join(fps, ", "))
}

// signStatement signs, or says on stderr why the statement goes unsigned.
func signStatement(ctx context.Context, f signFlags, g approval.Gate, reason string) (*approval.Signed, error) {
	st, err := approval.NewStatement(g.Rollout, g.Stage, g.PlanDigest, g.Decision, reason, time.Now())
	if err != nil {
		return nil, err
	}
	st.Run, st.TemporalNamespace = g.Run, g.TemporalNamespace
	rollout, d := g.Rollout, g.Decision
	s, err := f.sign(ctx, st)
	if errors.Is(err, errNoSigner) {
		fmt.Fprintf(os.Stderr, "not signed (%v): a worker that requires signatures will refuse it\n", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.SSHSig != "" {
		fmt.Fprintf(os.Stderr, "signed %s of %s with key %s\n", d, rollout, signingKey(s))
	} else {
		fmt.Fprintf(os.Stderr, "%s of %s carries an OIDC ID token bound to it, sealed to the workers' key\n", d, rollout)
	}
	return &s, nil
}

func signingKey(s approval.Signed) string {
	v, err := approval.SignatureKey(s)
	if err != nil {
		return "?"
	}
	return v
}
