package auth

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/youmark/pkcs8"
)

// tlsSettings are the ssl.* settings of one listener, listener prefix
// applied.
type tlsSettings struct {
	get      func(name string) (string, bool)
	readFile func(path string) ([]byte, error)
	// clientAuth is ssl.client.auth as it applies to the listener.
	clientAuth string
}

// keystore is the server certificate and what identifies it, for the
// reload checks.
type keystore struct {
	cert tls.Certificate
	leaf *x509.Certificate
}

// loadKeystore reads the listener's PEM key store: ssl.keystore.location (a
// file holding the private key and the certificate chain) or the inline
// ssl.keystore.key and ssl.keystore.certificate.chain, the key decrypted
// with ssl.key.password when it is an encrypted PKCS#8 key, as Kafka's
// DefaultSslEngineFactory reads PEM key stores.
func (s tlsSettings) loadKeystore() (keystore, error) {
	typ, _ := s.get("ssl.keystore.type")
	if !strings.EqualFold(typ, "PEM") {
		return keystore{}, fmt.Errorf("ssl.keystore.type %s: Gregor reads PEM key stores only; set ssl.keystore.type=PEM "+
			"and give the key and certificate chain as PEM (a JKS or PKCS12 store converts with keytool and openssl)", typ)
	}
	if pw, _ := s.get("ssl.keystore.password"); pw != "" {
		return keystore{}, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified")
	}
	location, _ := s.get("ssl.keystore.location")
	chain, _ := s.get("ssl.keystore.certificate.chain")
	key, _ := s.get("ssl.keystore.key")
	var certPEM, keyPEM []byte
	switch {
	case location != "" && (chain != "" || key != ""):
		return keystore{}, errors.New("ssl.keystore.location cannot be specified with ssl.keystore.key or ssl.keystore.certificate.chain")
	case location != "":
		b, err := s.readFile(location)
		if err != nil {
			return keystore{}, fmt.Errorf("ssl.keystore.location: %w", err)
		}
		certPEM, keyPEM = b, b
	case chain != "" && key != "":
		certPEM, keyPEM = []byte(chain), []byte(key)
	case chain != "" || key != "":
		return keystore{}, errors.New("both ssl.keystore.key and ssl.keystore.certificate.chain must be set")
	default:
		return keystore{}, errors.New("an SSL listener needs a key store: ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain")
	}
	password, _ := s.get("ssl.key.password")
	priv, err := pemPrivateKey(keyPEM, password)
	if err != nil {
		return keystore{}, err
	}
	var cert tls.Certificate
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, b.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return keystore{}, errors.New("the key store holds no PEM CERTIFICATE block")
	}
	cert.PrivateKey = priv
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return keystore{}, fmt.Errorf("the key store's certificate: %w", err)
	}
	cert.Leaf = leaf
	signer, ok := priv.(crypto.Signer)
	pub, ok2 := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !ok2 || !pub.Equal(signer.Public()) {
		return keystore{}, errors.New("the key store's private key does not belong to its first certificate")
	}
	return keystore{cert: cert, leaf: leaf}, nil
}

// pemPrivateKey finds the private key: PKCS#8 (encrypted with
// ssl.key.password, or not), PKCS#1 RSA or SEC 1 EC.
func pemPrivateKey(b []byte, password string) (any, error) {
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			return nil, errors.New("the key store holds no PEM private key")
		}
		switch blk.Type {
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, errors.New("the key store's private key is encrypted: set ssl.key.password")
			}
			k, err := pkcs8.ParsePKCS8PrivateKey(blk.Bytes, []byte(password))
			if err != nil {
				return nil, fmt.Errorf("the key store's private key does not decrypt with ssl.key.password: %w", err)
			}
			return k, nil
		case "PRIVATE KEY":
			if password != "" {
				return nil, errors.New("ssl.key.password is set but the key store's private key is not encrypted")
			}
			return x509.ParsePKCS8PrivateKey(blk.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(blk.Bytes)
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(blk.Bytes)
		}
	}
}

// loadTruststore reads the trusted certificates: ssl.truststore.location (a
// PEM file) or the inline ssl.truststore.certificates; nil when neither is
// set.
func (s tlsSettings) loadTruststore() (*x509.CertPool, error) {
	location, _ := s.get("ssl.truststore.location")
	inline, _ := s.get("ssl.truststore.certificates")
	if location == "" && inline == "" {
		return nil, nil
	}
	if typ, _ := s.get("ssl.truststore.type"); !strings.EqualFold(typ, "PEM") {
		return nil, fmt.Errorf("ssl.truststore.type %s: Gregor reads PEM trust stores only; set ssl.truststore.type=PEM", typ)
	}
	if pw, _ := s.get("ssl.truststore.password"); pw != "" {
		return nil, errors.New("SSL trust store password cannot be specified for PEM format")
	}
	if location != "" && inline != "" {
		return nil, errors.New("ssl.truststore.location cannot be specified with ssl.truststore.certificates")
	}
	b := []byte(inline)
	if location != "" {
		var err error
		if b, err = s.readFile(location); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("the trust store holds no PEM certificate")
	}
	return pool, nil
}

// tlsVersions maps ssl.enabled.protocols names; older protocols are refused.
var tlsVersions = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// tls13Suites are the TLS 1.3 suite names Java accepts in
// ssl.cipher.suites; Go always offers all three, which are all secure.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// versionsAndSuites reads ssl.enabled.protocols, ssl.protocol (the highest
// version used) and ssl.cipher.suites (IANA names, as Java and Go both name
// them).
func (s tlsSettings) versionsAndSuites(cfg *tls.Config) error {
	enabled, _ := s.get("ssl.enabled.protocols")
	for _, p := range splitComma(enabled) {
		v, ok := tlsVersions[p]
		if !ok {
			return fmt.Errorf("ssl.enabled.protocols: %s is not served; Gregor serves TLSv1.2 and TLSv1.3 only", p)
		}
		if cfg.MinVersion == 0 || v < cfg.MinVersion {
			cfg.MinVersion = v
		}
		cfg.MaxVersion = max(cfg.MaxVersion, v)
	}
	if cfg.MinVersion == 0 {
		return errors.New("ssl.enabled.protocols enables no protocol")
	}
	if p, _ := s.get("ssl.protocol"); p != "" && p != "TLS" {
		v, ok := tlsVersions[p]
		if !ok {
			return fmt.Errorf("ssl.protocol %s is not served; use TLSv1.2 or TLSv1.3", p)
		}
		if v < cfg.MinVersion {
			return fmt.Errorf("ssl.protocol %s is below every version in ssl.enabled.protocols", p)
		}
		cfg.MaxVersion = min(cfg.MaxVersion, v)
	}
	suites, _ := s.get("ssl.cipher.suites")
	known := map[string]uint16{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[cs.Name] = cs.ID
	}
	for _, name := range splitComma(suites) {
		if slices.Contains(tls13Suites, name) {
			continue
		}
		id, ok := known[name]
		if !ok {
			return fmt.Errorf("ssl.cipher.suites: unknown or unsupported cipher suite %s", name)
		}
		cfg.CipherSuites = append(cfg.CipherSuites, id)
	}
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// serverTLS builds a listener's TLS configuration and returns its key store.
func (s tlsSettings) serverTLS() (*tls.Config, keystore, error) {
	ks, err := s.loadKeystore()
	if err != nil {
		return nil, keystore{}, err
	}
	pool, err := s.loadTruststore()
	if err != nil {
		return nil, keystore{}, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{ks.cert}, ClientCAs: pool}
	switch s.clientAuth {
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.NoClientCert
	}
	if cfg.ClientAuth != tls.NoClientCert && pool == nil {
		return nil, keystore{}, fmt.Errorf("ssl.client.auth=%s needs a trust store (ssl.truststore.location or ssl.truststore.certificates) to verify client certificates", s.clientAuth)
	}
	if err := s.versionsAndSuites(cfg); err != nil {
		return nil, keystore{}, err
	}
	return cfg, ks, nil
}

// checkReload applies Kafka's rule for a key store changed at runtime: the
// new certificate keeps the subject and the subject alternative names of
// the old one, unless ssl.allow.dn.changes or ssl.allow.san.changes say
// otherwise.
func (s tlsSettings) checkReload(old, next keystore) error {
	if old.leaf == nil {
		return nil
	}
	if v, _ := s.get("ssl.allow.dn.changes"); !strings.EqualFold(v, "true") && old.leaf.Subject.String() != next.leaf.Subject.String() {
		return fmt.Errorf("Keystore DistinguishedName does not match: existing={%s}, new={%s}", old.leaf.Subject, next.leaf.Subject)
	}
	if v, _ := s.get("ssl.allow.san.changes"); !strings.EqualFold(v, "true") && !sameSANs(old.leaf, next.leaf) {
		return fmt.Errorf("Keystore SubjectAltNames do not match: existing=%v, new=%v", sans(old.leaf), sans(next.leaf))
	}
	return nil
}

func sans(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	slices.Sort(out)
	return out
}

func sameSANs(a, b *x509.Certificate) bool { return slices.Equal(sans(a), sans(b)) }
