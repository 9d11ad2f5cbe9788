// Package testpki makes certificates and signed tokens for tests: a CA,
// certificates it issues (PEM and tls.Certificate), JSON Web Key Sets and
// JWTs signed with go-jose. Keys are fresh per call; nothing is written
// unless a test asks (WriteFiles).
package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// CA is a certificate authority.
type CA struct {
	Key   *ecdsa.PrivateKey
	Cert  *x509.Certificate
	CAPEM []byte
}

var serial atomic.Int64

func nextSerial() *big.Int { return big.NewInt(time.Now().UnixNano() + serial.Add(1)) }

// New makes a CA.
func New(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: "Gregor Test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Key: key, Cert: cert, CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Cert is an issued certificate and its key.
type Cert struct {
	Key     *ecdsa.PrivateKey
	Leaf    *x509.Certificate
	CertPEM []byte // the certificate
	KeyPEM  []byte // the key, unencrypted PKCS#8
}

// Issue makes a certificate for subject CN=cn,O=Gregor Test, usable by
// servers (for dnsNames and 127.0.0.1) and clients.
func (ca *CA) Issue(t testing.TB, cn string, dnsNames []string) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: cn, Organization: []string{"Gregor Test"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    dnsNames}
	if len(dnsNames) > 0 {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return &Cert{Key: key, Leaf: leaf, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

// TLS is the certificate as crypto/tls takes it.
func (c *Cert) TLS(t testing.TB) tls.Certificate {
	t.Helper()
	tc, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// WriteFiles writes name.pem (key then certificate, a Kafka PEM key store),
// name.crt and name.key into dir and returns their paths.
func (c *Cert) WriteFiles(t testing.TB, dir, name string) (keystore, cert, key string) {
	t.Helper()
	keystore, cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for path, b := range map[string][]byte{keystore: append(append([]byte{}, c.KeyPEM...), c.CertPEM...), cert: c.CertPEM, key: c.KeyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return keystore, cert, key
}

// JWKS is a JSON Web Key Set of public keys by key id.
func JWKS(t testing.TB, keys map[string]any) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for kid, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Use: "sig", Algorithm: string(jose.ES256)})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SignJWT signs claims with key (ES256) under key id kid.
func SignJWT(t testing.TB, key crypto.Signer, kid string, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
