package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A TLSServer is a redis-server that listens on TLSAddr with a
// certificate made for it, beside its plain port (Server.Addr).
type TLSServer struct {
	*Server
	// TLSAddr is "127.0.0.1:port" of the TLS listener.
	TLSAddr string
	// Roots trusts the server's certificate, made for 127.0.0.1.
	Roots *x509.CertPool
}

// StartTLSServer starts a redis-server that also listens for TLS, with a
// self-signed certificate for 127.0.0.1 written to a temporary directory;
// clients need no certificate of their own.
func StartTLSServer(t testing.TB) *TLSServer {
	t.Helper()
	dir := t.TempDir()
	roots := writeCert(t, dir)
	port := FreePort(t)
	srv := StartServer(t, "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "cert.pem"), "--tls-key-file", filepath.Join(dir, "key.pem"),
		"--tls-ca-cert-file", filepath.Join(dir, "cert.pem"), "--tls-auth-clients", "no")
	return &TLSServer{Server: srv, TLSAddr: "127.0.0.1:" + strconv.Itoa(port), Roots: roots}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key to
// dir (cert.pem, key.pem) and returns a pool that trusts it.
func writeCert(t testing.TB, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}
