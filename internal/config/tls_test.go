package config_test

// Temporal client mTLS, proven end to end: the test generates a CA, a
// server certificate and client certificates, puts a TLS listener that
// requires and verifies client certificates in front of a real Temporal dev
// server (the pinned CLI v1.5.1's `server start-dev` has no TLS flags, so the
// listener terminates TLS and forwards the gRPC stream), and dials it with
// the options config.Temporal.ClientOptions builds from the --tls-* flags.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/logging"
)

// pki is a throwaway certificate authority.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &pki{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate; it returns the PEM certificate and key.
func (ca *pki) issue(t *testing.T, cn string, usage x509.ExtKeyUsage, dns ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dns,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// mtlsFront is a TLS listener that requires a client certificate signed by
// its CA and forwards each accepted connection to backend (plain gRPC).
type mtlsFront struct {
	ln      net.Listener
	mu      sync.Mutex
	clients []string // CNs of client certificates that completed a handshake
	refused []string // handshake errors
}

func startFront(t *testing.T, ca *pki, serverCert, serverKey []byte, backend string) *mtlsFront {
	t.Helper()
	cert, err := tls.X509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2"}, // gRPC insists on ALPN h2
	})
	require.NoError(t, err)
	f := &mtlsFront{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c.(*tls.Conn), backend)
		}
	}()
	return f
}

func (f *mtlsFront) serve(c *tls.Conn, backend string) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := c.HandshakeContext(ctx)
	cancel()
	f.mu.Lock()
	if err != nil {
		f.refused = append(f.refused, err.Error())
		f.mu.Unlock()
		return
	}
	st := c.ConnectionState()
	f.clients = append(f.clients, st.PeerCertificates[0].Subject.CommonName)
	f.mu.Unlock()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
}

func (f *mtlsFront) seen() (clients, refused []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.clients...), append([]string(nil), f.refused...)
}

// temporalBackend is the dev server `make test` started (TEMPORAL_ADDRESS),
// or one started here.
func temporalBackend(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("TEMPORAL_ADDRESS"); addr != "" {
		return addr
	}
	if testing.Short() {
		t.Skip("needs a Temporal dev server (TEMPORAL_ADDRESS or the pinned CLI); skipped with -short")
	}
	srv, err := devstack.StartTemporal(context.Background(), devstack.TemporalOptions{}, zerolog.Nop())
	if err != nil {
		t.Fatalf("start Temporal dev server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv.FrontendHostPort()
}

func TestTemporalClientMTLS(t *testing.T) {
	backend := temporalBackend(t)
	dir := t.TempDir()
	ca := newCA(t, "fleetsaga test CA")
	srvCert, srvKey := ca.issue(t, "temporal", x509.ExtKeyUsageServerAuth, "temporal.fleetsaga.test")
	front := startFront(t, ca, srvCert, srvKey, backend)
	addr := front.ln.Addr().String()

	cliCert, cliKey := ca.issue(t, "fleetsaga-worker", x509.ExtKeyUsageClientAuth)
	rogue := newCA(t, "rogue CA")
	rogueCert, rogueKey := rogue.issue(t, "intruder", x509.ExtKeyUsageClientAuth)

	caPath := write(t, dir, "ca.pem", ca.pem)
	certPath := write(t, dir, "client.pem", cliCert)
	keyPath := write(t, dir, "client-key.pem", cliKey)
	roguePath := write(t, dir, "rogue.pem", rogueCert)
	rogueKeyPath := write(t, dir, "rogue-key.pem", rogueKey)
	rogueCAPath := write(t, dir, "rogue-ca.pem", rogue.pem)

	log := logging.Temporal(zerolog.Nop())
	dial := func(tc config.Temporal) (client.Client, error) {
		t.Helper()
		tc.Address, tc.Namespace, tc.TaskQueue = addr, "default", "fleetsaga"
		require.NoError(t, tc.Validate())
		opts, err := tc.ClientOptions(log)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return client.DialContext(ctx, opts)
	}

	t.Run("client certificate and CA: connected, server verified the client", func(t *testing.T) {
		c, err := dial(config.Temporal{TLSCert: certPath, TLSKey: keyPath, TLSCA: caPath, ServerName: "temporal.fleetsaga.test"})
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
		require.NoError(t, err, "a real call through the mTLS listener")
		assert.Equal(t, "default", resp.GetNamespaceInfo().GetName())
		clients, _ := front.seen()
		assert.Contains(t, clients, "fleetsaga-worker", "the listener saw our client certificate")
	})

	refusedCase := func(name string, tc config.Temporal, want ...string) {
		t.Run(name, func(t *testing.T) {
			before, _ := front.seen()
			c, err := dial(tc)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded; want a TLS failure")
			}
			msg := err.Error()
			ok := false
			for _, w := range want {
				ok = ok || strings.Contains(msg, w)
			}
			assert.True(t, ok, "error %q should mention one of %q", msg, want)
			t.Logf("refused as expected: %s", msg)
			after, _ := front.seen()
			assert.Equal(t, before, after, "no new client got through")
		})
	}
	// With TLS 1.3 the client finishes its side of the handshake before the
	// server's verdict arrives: the refusal shows as the server's alert or as
	// the connection it closed.
	serverRefused := []string{"certificate required", "broken pipe", "connection reset", "EOF"}
	refusedCase("no client certificate: the server refuses the handshake",
		config.Temporal{TLSCA: caPath, ServerName: "temporal.fleetsaga.test"},
		serverRefused...)
	// (Go's client does not even offer a certificate whose issuer the server
	// did not list as acceptable, so this is refused as "certificate required".)
	refusedCase("client certificate from another CA: refused",
		config.Temporal{TLSCert: roguePath, TLSKey: rogueKeyPath, TLSCA: caPath, ServerName: "temporal.fleetsaga.test"},
		append(serverRefused, "unknown certificate authority", "bad certificate")...)
	refusedCase("server certificate not signed by the CA we trust: client refuses",
		config.Temporal{TLSCert: certPath, TLSKey: keyPath, TLSCA: rogueCAPath, ServerName: "temporal.fleetsaga.test"},
		"certificate signed by unknown authority")
	refusedCase("wrong server name: client refuses",
		config.Temporal{TLSCert: certPath, TLSKey: keyPath, TLSCA: caPath, ServerName: "evil.example"},
		"certificate is valid for temporal.fleetsaga.test, not evil.example")
}

// Without a server: the TLS settings are checked up front.
func TestTemporalTLSOptions(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "fleetsaga test CA")
	cert, key := ca.issue(t, "w", x509.ExtKeyUsageClientAuth)
	caPath := write(t, dir, "ca.pem", ca.pem)
	certPath := write(t, dir, "c.pem", cert)
	keyPath := write(t, dir, "k.pem", key)
	notPEM := write(t, dir, "junk.pem", []byte("not a certificate"))
	base := config.Temporal{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "q"}

	t.Run("no TLS flags: plain connection", func(t *testing.T) {
		opts, err := base.ClientOptions(nil)
		require.NoError(t, err)
		assert.Nil(t, opts.ConnectionOptions.TLS)
	})
	t.Run("full mTLS config", func(t *testing.T) {
		tc := base
		tc.TLSCert, tc.TLSKey, tc.TLSCA, tc.ServerName = certPath, keyPath, caPath, "temporal.example"
		require.NoError(t, tc.Validate())
		opts, err := tc.ClientOptions(nil)
		require.NoError(t, err)
		require.NotNil(t, opts.ConnectionOptions.TLS)
		assert.Len(t, opts.ConnectionOptions.TLS.Certificates, 1)
		assert.NotNil(t, opts.ConnectionOptions.TLS.RootCAs)
		assert.Equal(t, "temporal.example", opts.ConnectionOptions.TLS.ServerName)
		assert.GreaterOrEqual(t, opts.ConnectionOptions.TLS.MinVersion, uint16(tls.VersionTLS12))
	})
	bad := []struct {
		name string
		tc   config.Temporal
		want string
	}{
		{"cert without key", config.Temporal{TLSCert: certPath}, "--tls-cert and --tls-key must be given together"},
		{"key without cert", config.Temporal{TLSKey: keyPath}, "--tls-cert and --tls-key must be given together"},
		{"missing CA file", config.Temporal{TLSCA: filepath.Join(dir, "nope.pem")}, "--tls-ca"},
		{"missing cert file", config.Temporal{TLSCert: filepath.Join(dir, "nope.pem"), TLSKey: keyPath}, "--tls-cert"},
	}
	for _, c := range bad {
		t.Run("validate: "+c.name, func(t *testing.T) {
			tc := c.tc
			tc.Address, tc.Namespace, tc.TaskQueue = base.Address, base.Namespace, base.TaskQueue
			err := tc.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("CA file without a certificate", func(t *testing.T) {
		tc := base
		tc.TLSCA = notPEM
		_, err := tc.ClientOptions(nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "holds no PEM certificate")
	})
	t.Run("key that does not match the certificate", func(t *testing.T) {
		_, otherKey := ca.issue(t, "other", x509.ExtKeyUsageClientAuth)
		tc := base
		tc.TLSCert, tc.TLSKey = certPath, write(t, dir, "other-key.pem", otherKey)
		_, err := tc.ClientOptions(nil)
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), "load client certificate"), err.Error())
		assert.False(t, errors.Is(err, os.ErrNotExist))
	})
}
