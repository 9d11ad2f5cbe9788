package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/crypto/bcrypt"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/testpki"
)

// secureBroker is a broker with every kind of listener, TLS from PEM files,
// SASL PLAIN (the admin), SCRAM and unsecured OAUTHBEARER, and the
// StandardAuthorizer with User:admin as super user.
type secureBroker struct {
	*brokertest.Broker
	dir                           string
	ca                            *testpki.CA
	caFile                        string
	client                        *testpki.Cert
	clientCert                    string
	clientKey                     string
	sasl, saslSSL, ssl, plaintext string // listener addresses
}

const adminJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_carol="carol-secret";`

func startSecure(t *testing.T, overrides ...string) *secureBroker {
	t.Helper()
	dir := t.TempDir()
	ca := testpki.New(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	keystore, _, _ := ca.Issue(t, "broker", []string{"localhost"}).WriteFiles(t, dir, "broker")
	client := ca.Issue(t, "client", nil)
	_, clientCert, clientKey := client.WriteFiles(t, dir, "client")
	props := map[string]string{
		"listeners":                                                 "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.security.protocol.map":                            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":                                         "PEM",
		"ssl.keystore.location":                                     keystore,
		"ssl.truststore.type":                                       "PEM",
		"ssl.truststore.location":                                   caFile,
		"listener.name.ssl.ssl.client.auth":                         "required",
		"ssl.principal.mapping.rules":                               "RULE:^CN=([^,]+),.*$/$1/,DEFAULT",
		"sasl.enabled.mechanisms":                                   "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":       adminJAAS,
		"listener.name.sasl_ssl.plain.sasl.jaas.config":             adminJAAS,
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":       "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"authorizer.class.name":                                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                               "User:admin",
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		props[overrides[i]] = overrides[i+1]
	}
	b := brokertest.Start(t, props)
	return &secureBroker{Broker: b, dir: dir, ca: ca, caFile: caFile, client: client, clientCert: clientCert, clientKey: clientKey,
		sasl: b.ListenerAddr("SASL_PLAINTEXT").String(), saslSSL: b.ListenerAddr("SASL_SSL").String(),
		ssl: b.ListenerAddr("SSL").String(), plaintext: b.ListenerAddr("PLAINTEXT").String()}
}

func (s *secureBroker) tls() *tls.Config {
	return &tls.Config{RootCAs: s.ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
}

func (s *secureBroker) kgo(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin is the super user, over SASL_PLAINTEXT with PLAIN.
func (s *secureBroker) admin(t *testing.T) *kadm.Client {
	return kadm.NewClient(s.kgo(t, s.sasl, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
}

func mustACL(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateACLs %s: %v", r.Principal, r.Err)
		}
	}
}

func setScram(t *testing.T, adm *kadm.Client, user, password string, m kadm.ScramMechanism) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(context.Background(), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: 4096, Password: password}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
}

// TLS, SCRAM over SASL_SSL, mTLS principals and ACLs with real clients: a
// client without permission gets TOPIC_AUTHORIZATION_FAILED, the same
// client with an ACL produces and consumes.
func TestSecurityEndToEnd(t *testing.T) {
	s := startSecure(t)
	ctx := testCtx(t, 60*time.Second)
	adm := s.admin(t)
	topic := uniqueTopic(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	setScram(t, adm, "alice", "alice-pw", kadm.ScramSha256)
	setScram(t, adm, "bob", "bob-pw", kadm.ScramSha512)
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || described["alice"].CredInfos[0].Iterations != 4096 || described["bob"].CredInfos[0].Mechanism != kadm.ScramSha512 {
		t.Fatalf("DescribeUserSCRAMs: %+v %v", described, err)
	}

	alice := s.kgo(t, s.saslSSL, kgo.DialTLSConfig(s.tls()),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()), kgo.DefaultProduceTopic(topic))
	if err := alice.Ping(ctx); err != nil {
		t.Fatalf("SCRAM-SHA-256 over TLS: %v", err)
	}
	err = alice.ProduceSync(ctx, kgo.StringRecord("denied")).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	mustACL(t, adm, kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err := alice.ProduceSync(ctx, kgo.StringRecord("allowed")).FirstErr(); err != nil {
		t.Fatalf("produce with a WRITE ACL: %v", err)
	}

	// bob (SCRAM-SHA-512) reads through a prefixed ACL and a group ACL.
	group := "g-" + topic
	mustACL(t, adm, kadm.NewACLs().Allow("User:bob").Topics(topic[:len(topic)-3]).ResourcePatternType(kadm.ACLPatternPrefixed).
		Groups(group).Operations(kadm.OpRead))
	bob := s.kgo(t, s.saslSSL, kgo.DialTLSConfig(s.tls()), kgo.SASL(scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism()),
		kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := bob.PollRecords(ctx, 10)
	if err := fetches.Err(); err != nil || fetches.NumRecords() != 1 || string(fetches.Records()[0].Value) != "allowed" {
		t.Fatalf("bob's consume: %d records, %v", fetches.NumRecords(), err)
	}

	// DENY wins over ALLOW.
	mustACL(t, adm, kadm.NewACLs().Deny("User:alice").Topics(topic).Operations(kadm.OpWrite))
	if err := alice.ProduceSync(ctx, kgo.StringRecord("denied again")).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce with a DENY ACL: %v", err)
	}
	described2, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	n := 0
	for _, d := range described2 {
		n += len(d.Described)
	}
	if err != nil || n != 4 {
		t.Fatalf("DescribeACLs: %d ACLs (%+v), %v; want the 4 created", n, described2, err)
	}

	// mTLS: the certificate's CN is the principal.
	clientTLS := s.tls()
	clientTLS.Certificates = []tls.Certificate{s.client.TLS(t)}
	mtls := s.kgo(t, s.ssl, kgo.DialTLSConfig(clientTLS), kgo.DefaultProduceTopic(topic))
	if err := mtls.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("mTLS produce without an ACL: %v", err)
	}
	mustACL(t, adm, kadm.NewACLs().Allow("User:client").Topics(topic).Operations(kadm.OpWrite))
	if err := mtls.ProduceSync(ctx, kgo.StringRecord("from mTLS")).FirstErr(); err != nil {
		t.Fatalf("mTLS produce with an ACL: %v", err)
	}
	// Without a client certificate the SSL listener refuses the handshake.
	noCert := s.kgo(t, s.ssl, kgo.DialTLSConfig(s.tls()))
	if err := noCert.Ping(ctx); err == nil {
		t.Error("the SSL listener (ssl.client.auth=required) accepted a client without a certificate")
	}

	// An unauthenticated PLAINTEXT client is ANONYMOUS: it sees no topic.
	anon := kadm.NewClient(s.kgo(t, s.plaintext))
	if topics, err := anon.ListTopics(ctx); err != nil || len(topics) != 0 {
		t.Errorf("ANONYMOUS lists topics %v (%v)", topics.Names(), err)
	}
	res, err := anon.CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").Topics("*").Operations(kadm.OpAll))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("ANONYMOUS's CreateACLs: %+v %v, want CLUSTER_AUTHORIZATION_FAILED", res, err)
	}

	// The ACLs and credentials are in the metadata: after a restart they
	// still apply. A new idempotent producer for alice is refused outright
	// (InitProducerId: no IDEMPOTENT_WRITE, and her only WRITE is denied);
	// without idempotence the produce is TOPIC_AUTHORIZATION_FAILED.
	s.Stop()
	b2 := brokertest.StartIn(t, s.Dir, s.Props)
	saslSSL := b2.ListenerAddr("SASL_SSL").String()
	login := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism())
	idem := s.kgo(t, saslSSL, kgo.DialTLSConfig(s.tls()), login, kgo.DefaultProduceTopic(topic))
	if err := idem.ProduceSync(ctx, kgo.StringRecord("after restart")).FirstErr(); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("after a restart, an idempotent producer: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	plainProducer := s.kgo(t, saslSSL, kgo.DialTLSConfig(s.tls()), login, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
	if err := plainProducer.ProduceSync(ctx, kgo.StringRecord("after restart")).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("after a restart, the DENY ACL: %v", err)
	}
}

// Bad input on the auth path is answered as Kafka answers it and the broker
// keeps serving others.
func TestSecurityBadInput(t *testing.T) {
	s := startSecure(t)
	ctx := testCtx(t, 60*time.Second)
	adm := s.admin(t)
	setScram(t, adm, "alice", "alice-pw", kadm.ScramSha256)
	ping := func(addr string, opts ...kgo.Opt) error {
		cl := s.kgo(t, addr, opts...)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cl.Ping(pctx)
	}
	for name, m := range map[string]sasl.Mechanism{
		"wrong SCRAM password": scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(),
		"unknown SCRAM user":   scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(),
		"wrong PLAIN password": plain.Auth{User: "admin", Pass: "nope"}.AsMechanism(),
	} {
		if err := ping(s.saslSSL, kgo.DialTLSConfig(s.tls()), kgo.SASL(m)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	// OAUTHBEARER with Kafka's default (unsecured) validator: a live token
	// passes, an expired one fails with invalid_token.
	token := func(exp time.Time) sasl.Mechanism {
		enc := base64.RawURLEncoding.EncodeToString
		return oauth.Auth{Token: enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"svc","exp":%d}`, exp.Unix()))) + "."}.AsMechanism()
	}
	if err := ping(s.sasl, kgo.SASL(token(time.Now().Add(time.Hour)))); err != nil {
		t.Errorf("OAUTHBEARER: %v", err)
	}
	if err := ping(s.sasl, kgo.SASL(token(time.Now().Add(-time.Minute)))); !errors.Is(err, kerr.SaslAuthenticationFailed) ||
		!strings.Contains(err.Error(), "invalid_token") {
		t.Errorf("expired OAUTHBEARER token: %v", err)
	}
	// A TLS client on a plaintext port, and a plaintext client on a TLS
	// port, fail; so does a request before the SASL handshake.
	if err := ping(s.plaintext, kgo.DialTLSConfig(s.tls())); err == nil {
		t.Error("a TLS client reached the PLAINTEXT listener")
	}
	if err := ping(s.saslSSL); err == nil {
		t.Error("a plaintext client reached the SASL_SSL listener")
	}
	r := dialRaw(t, s.sasl)
	r.write(r.frame(kmsgMetadata()))
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.c.Read(make([]byte, 1)); err == nil {
		t.Error("a Metadata request before SaslHandshake was answered")
	}
	// Truncated and garbled SASL frames close only their own connection.
	for _, raw := range [][]byte{{0, 0, 0, 3, 0, 17, 0}, {0, 0, 0, 200, 0, 36, 0, 2}} {
		c, err := net.DialTimeout("tcp", s.sasl, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(raw)
		c.Close()
	}
	if err := ping(s.saslSSL, kgo.DialTLSConfig(s.tls()), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism())); err != nil {
		t.Errorf("a good client after the bad ones: %v", err)
	}
}

// kcat (librdkafka) over SASL_SSL with SCRAM, and over SSL with a client
// certificate.
func TestSecurityKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (scripts/test.sh installs it with apt-get)")
	}
	s := startSecure(t)
	ctx := testCtx(t, 60*time.Second)
	adm := s.admin(t)
	topic := uniqueTopic(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	setScram(t, adm, "alice", "alice-pw", kadm.ScramSha256)
	mustACL(t, adm, kadm.NewACLs().Allow("User:alice", "User:client").Topics(topic).Groups("*").Operations(kadm.OpWrite, kadm.OpRead))
	scramArgs := []string{"-b", s.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-pw", "-X", "ssl.ca.location=" + s.caFile}
	out := kcat(t, "", append(scramArgs, "-L", "-t", topic)...)
	if !strings.Contains(out, fmt.Sprintf("topic %q with 1 partitions", topic)) {
		t.Errorf("kcat -L over SASL_SSL:\n%s", out)
	}
	kcat(t, "one\ntwo\n", append(scramArgs, "-P", "-t", topic)...)
	mtlsArgs := []string{"-b", s.ssl, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + s.caFile,
		"-X", "ssl.certificate.location=" + s.clientCert, "-X", "ssl.key.location=" + s.clientKey}
	kcat(t, "three\n", append(mtlsArgs, "-P", "-t", topic)...)
	got := kcat(t, "", append(scramArgs, "-C", "-t", topic, "-o", "beginning", "-e", "-q")...)
	if got != "one\ntwo\nthree\n" {
		t.Errorf("kcat consumed %q", got)
	}

	// SASL_PLAINTEXT: PLAIN for the super user, SCRAM-SHA-512 for a reader.
	plainArgs := []string{"-b", s.sasl, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
		"-X", "sasl.username=admin", "-X", "sasl.password=admin-secret"}
	kcat(t, "four\n", append(plainArgs, "-P", "-t", topic)...)
	setScram(t, adm, "bob", "bob-pw", kadm.ScramSha512)
	mustACL(t, adm, kadm.NewACLs().Allow("User:bob").Topics(topic).Operations(kadm.OpRead))
	bobArgs := []string{"-b", s.sasl, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=bob", "-X", "sasl.password=bob-pw"}
	if got := kcat(t, "", append(bobArgs, "-C", "-t", topic, "-o", "beginning", "-e", "-q")...); got != "one\ntwo\nthree\nfour\n" {
		t.Errorf("kcat SCRAM-SHA-512 consumed %q", got)
	}

	// Refusals, as librdkafka reports them: a wrong password, and a write
	// the ACLs do not allow (bob may only read).
	wrong := append([]string(nil), bobArgs...)
	wrong[len(wrong)-1] = "sasl.password=nope"
	// (-m 1: kcat -L otherwise waits 5 s for metadata after the refusal.)
	if out, err := kcatFails(t, "", append(wrong, "-m", "1", "-L", "-t", topic)...); err == nil || !strings.Contains(out, "Authentication failed") {
		t.Errorf("kcat with a wrong password: %v\n%s", err, out)
	}
	if out, err := kcatFails(t, "five\n", append(bobArgs, "-P", "-t", topic)...); err == nil || !strings.Contains(out, "Topic authorization failed") {
		t.Errorf("kcat produce without WRITE: %v\n%s", err, out)
	}
}

// kcatFails runs kcat expecting it to fail, and returns its combined output
// and exit error.
func kcatFails(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("kcat %s: no exit within 20s\n%s", strings.Join(args, " "), tail(string(out), 2000))
	}
	return string(out), err
}

func kmsgMetadata() kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	return req
}

// OAUTHBEARER against a JSON Web Key Set file: a token signed by a key of
// the set, for the expected audience and issuer, authenticates; an unsigned
// one, or one for another audience, does not.
func TestSecurityOAuthJWKS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, testpki.JWKS(t, map[string]any{"k1": &key.PublicKey}), 0o600); err != nil {
		t.Fatal(err)
	}
	b := brokertest.Start(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url":                                          "file://" + jwks,
		"sasl.oauthbearer.expected.audience":                                          "kafka",
		"sasl.oauthbearer.expected.issuer":                                            "https://idp.example",
	})
	addr := b.ListenerAddr("SASL_PLAINTEXT").String()
	ctx := testCtx(t, 30*time.Second)
	ping := func(token string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return cl.Ping(pctx)
	}
	now := time.Now()
	claims := func(aud string) map[string]any {
		return map[string]any{"sub": "svc", "aud": aud, "iss": "https://idp.example", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	if err := ping(testpki.SignJWT(t, key, "k1", claims("kafka"))); err != nil {
		t.Errorf("signed token: %v", err)
	}
	if err := ping(testpki.SignJWT(t, key, "k1", claims("other"))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("token for another audience: %v", err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	unsigned := enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"svc","exp":%d}`, now.Add(time.Hour).Unix()))) + "."
	if err := ping(unsigned); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("unsigned token with a key set configured: %v", err)
	}
}

// A client that pipelines requests behind its SASL exchange, all in one
// write, gets nothing handled before the exchange decides: behind a failed
// SaslAuthenticate a super user's produce is not appended and the
// connection closes; behind a successful one it is handled as that user;
// ahead of the handshake it closes the connection. A frame above
// sasl.server.max.receive.size before authentication is not read.
func TestSecurityPipelinedBehindAuthentication(t *testing.T) {
	s := startSecure(t)
	ctx := testCtx(t, 60*time.Second)
	adm := s.admin(t)
	topic := uniqueTopic(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	endOffset := func() int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(topic, 0)
		return o.Offset
	}
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Version, handshake.Mechanism = 1, "PLAIN"
	authenticate := func(password string) *kmsg.SASLAuthenticateRequest {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, []byte("\x00admin\x00"+password)
		return req
	}
	// recv reads the answer to the request sent with correlation id corr.
	recv := func(r *rawConn, req kmsg.Request, corr int32) kmsg.Response {
		t.Helper()
		r.corr = corr
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		if err := resp.ReadFrom(r.readResponse(resp.IsFlexible())); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, addr := range []string{s.sasl, s.saslSSL} {
		dial := func() *rawConn {
			r := dialRaw(t, addr)
			if addr == s.saslSSL {
				r.c = tls.Client(r.c, s.tls())
			}
			return r
		}
		// A wrong password, a produce behind it.
		before := endOffset()
		r := dial()
		var all []byte
		var corrs []int32
		for _, req := range []kmsg.Request{handshake, authenticate("wrong"), produceRequest(topic, validBatch("never"))} {
			all = append(all, r.frame(req)...)
			corrs = append(corrs, r.corr)
		}
		r.write(all)
		if resp := recv(r, handshake, corrs[0]).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("%s: handshake: %v", addr, kerr.ErrorForCode(resp.ErrorCode))
		}
		if resp := recv(r, authenticate(""), corrs[1]).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("%s: wrong password: %v", addr, kerr.ErrorForCode(resp.ErrorCode))
		}
		r.expectClosed("a produce behind a failed authentication")
		if o := endOffset(); o != before {
			t.Fatalf("%s: a produce behind a failed authentication was appended (end offset %d, want %d)", addr, o, before)
		}

		// The right password: the produce behind it is handled as admin.
		r = dial()
		all, corrs = nil, nil
		for _, req := range []kmsg.Request{handshake, authenticate("admin-secret"), produceRequest(topic, validBatch("once"))} {
			all = append(all, r.frame(req)...)
			corrs = append(corrs, r.corr)
		}
		r.write(all)
		recv(r, handshake, corrs[0])
		if resp := recv(r, authenticate(""), corrs[1]).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
			t.Fatalf("%s: authenticate: %v", addr, kerr.ErrorForCode(resp.ErrorCode))
		}
		resp := recv(r, produceRequest(topic, nil), corrs[2]).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%s: produce behind a successful authentication: %v", addr, kerr.ErrorForCode(code))
		}
		before = endOffset()

		// Before authentication a frame above sasl.server.max.receive.size
		// (512 KiB) closes the connection as soon as its size is read.
		r = dial()
		r.write(binary.BigEndian.AppendUint32(nil, 600<<10))
		r.expectClosed("a 600 KiB frame before authentication")

		// A produce ahead of the handshake closes the connection.
		r = dial()
		r.write(append(r.frame(produceRequest(topic, validBatch("never"))), r.frame(handshake)...))
		r.expectClosed("a produce ahead of the SASL handshake")
		if o := endOffset(); o != before {
			t.Fatalf("%s: a produce ahead of the handshake was appended (end offset %d, want %d)", addr, o, before)
		}
	}
	if o := endOffset(); o != 2 {
		t.Fatalf("end offset %d, want 2 (one produce per listener)", o)
	}
}

// A topic of several segments read back whole over every kind of listener:
// PLAINTEXT and SASL_PLAINTEXT send the record sets from the segment files
// with sendfile(2), SSL and SASL_SSL copy them through TLS; every client
// gets every record, in order, byte for byte.
func TestSecurityFetchOverEveryListener(t *testing.T) {
	s := startSecure(t)
	ctx := testCtx(t, 2*time.Minute)
	adm := s.admin(t)
	topic := uniqueTopic(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")}, topic); err != nil {
		t.Fatal(err)
	}
	mustACL(t, adm, kadm.NewACLs().Allow("User:ANONYMOUS", "User:client").Topics(topic).Operations(kadm.OpRead))
	const n, size = 4000, 1000
	value := func(i int) []byte {
		v := []byte(fmt.Sprintf("%08d", i))
		for len(v) < size {
			v = append(v, byte('a'+(i+len(v))%26))
		}
		return v
	}
	login := kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	producer := s.kgo(t, s.sasl, login, kgo.DefaultProduceTopic(topic))
	for i := 0; i < n; i += 500 {
		recs := make([]*kgo.Record, 0, 500)
		for j := i; j < i+500; j++ {
			recs = append(recs, &kgo.Record{Value: value(j)})
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	clientTLS := s.tls()
	clientTLS.Certificates = []tls.Certificate{s.client.TLS(t)}
	for name, opts := range map[string][]kgo.Opt{
		"PLAINTEXT":      {kgo.SeedBrokers(s.plaintext)},
		"SASL_PLAINTEXT": {kgo.SeedBrokers(s.sasl), login},
		"SSL":            {kgo.SeedBrokers(s.ssl), kgo.DialTLSConfig(clientTLS)},
		"SASL_SSL":       {kgo.SeedBrokers(s.saslSSL), kgo.DialTLSConfig(s.tls()), login},
	} {
		cl := s.kgo(t, "", append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(8<<20))...)
		for got := 0; got < n; {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, r := range fs.Records() {
				if r.Offset != int64(got) || !bytes.Equal(r.Value, value(got)) {
					t.Fatalf("%s: record %d at offset %d is %.20q, want %.20q", name, got, r.Offset, r.Value, value(got))
				}
				got++
			}
		}
		cl.Close()
	}
}

// KIP-368 with a real client: with connections.max.reauth.ms of 1 s on the
// SASL_SSL listener, a SCRAM producer re-authenticates its connections in
// place again and again (franz-go keeps a second of margin, so with a 1 s
// session it re-authenticates before nearly every request, after draining
// the ones in flight), loses nothing, and no session expires unrenewed.
func TestSecurityReauthenticationUnderLoad(t *testing.T) {
	s := startSecure(t, "listener.name.sasl_ssl.connections.max.reauth.ms", "1000")
	ctx := testCtx(t, 2*time.Minute)
	adm := s.admin(t)
	topic := uniqueTopic(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	setScram(t, adm, "alice", "alice-pw", kadm.ScramSha256)
	mustACL(t, adm, kadm.NewACLs().Allow("User:alice").Topics(topic).Groups("*").Operations(kadm.OpWrite, kadm.OpRead))
	login := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism())
	producer := s.kgo(t, s.saslSSL, kgo.DialTLSConfig(s.tls()), login, kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	admin := s.AdminAddr().String()
	reauths := func() float64 {
		return metricValue(t, admin, "kafka_server_socket_server_metrics_successful_reauthentication_total", `listener="SASL_SSL"`)
	}
	var sent int
	start, deadline := time.Now(), time.Now().Add(30*time.Second)
	for reauths() < 3 || time.Since(start) < 2*time.Second {
		if time.Now().After(deadline) {
			t.Fatalf("%v re-authentications in 30 s with connections.max.reauth.ms=1000", reauths())
		}
		recs := make([]*kgo.Record, 50)
		for i := range recs {
			recs[i] = kgo.StringRecord(fmt.Sprint(sent + i))
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("after %d records: %v", sent, err)
		}
		sent += len(recs)
	}
	consumer := s.kgo(t, s.saslSSL, kgo.DialTLSConfig(s.tls()), login, kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < sent {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	expired := metricValue(t, admin, "kafka_server_socket_server_metrics_expired_connections_killed_count", `listener="SASL_SSL"`)
	failed := metricValue(t, admin, "kafka_server_socket_server_metrics_failed_reauthentication_total", `listener="SASL_SSL"`)
	t.Logf("%d records in %v, %v re-authentications, %v failed, %v sessions expired", sent, time.Since(start).Round(time.Millisecond), reauths(), failed, expired)
	if expired != 0 || failed != 0 {
		t.Fatalf("%v sessions expired and %v re-authentications failed, want none", expired, failed)
	}
}

// metricValue sums the series of a metric family whose labels contain
// labels, from the admin /metrics endpoint.
func metricValue(t testing.TB, adminAddr, name, labels string) float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, labels) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// The CLI as a user runs it against a secured broker: gregor user scram
// and gregor acl as the super user over SASL_SSL (GREGOR_* variables), then
// produce and consume as the new user with --tls-*/--sasl-* flags; what the
// ACLs refuse, and a deleted credential, fail with Kafka's errors.
func TestSecurityCLI(t *testing.T) {
	s := startSecure(t)
	ctx := testCtx(t, 90*time.Second)
	topic := uniqueTopic(t)
	if _, err := s.admin(t).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	gregor := func(stdin string, env []string, args ...string) (string, error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, gregorBin, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	superUser := []string{"GREGOR_BROKERS=" + s.saslSSL, "GREGOR_TLS_CA=" + s.caFile, "GREGOR_TLS_SERVER_NAME=localhost",
		"GREGOR_SASL_MECHANISM=PLAIN", "GREGOR_SASL_USER=admin", "GREGOR_SASL_PASSWORD=admin-secret"}
	must := func(stdin string, env []string, args ...string) string {
		t.Helper()
		out, err := gregor(stdin, env, args...)
		if err != nil {
			t.Fatalf("gregor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must("", append(superUser, "GREGOR_SCRAM_PASSWORD=alice-pw"), "user", "scram", "set", "alice", "--mechanism", "SCRAM-SHA-512")
	if out := must("", superUser, "user", "scram", "list"); !strings.Contains(out, "alice") || !strings.Contains(out, "SCRAM-SHA-512") {
		t.Fatalf("gregor user scram list:\n%s", out)
	}
	must("", superUser, "acl", "create", "--allow-principal", "User:alice", "--operation", "write,read", "--topic", topic, "--group", "*")
	var rows []map[string]string
	if err := json.Unmarshal([]byte(must("", superUser, "acl", "list", "--topic", topic, "-o", "json")), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("gregor acl list --topic: %v %+v", err, rows)
	}

	alice := []string{"-b", s.saslSSL, "--tls-ca", s.caFile, "--tls-server-name", "localhost",
		"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice"}
	aliceEnv := []string{"GREGOR_SASL_PASSWORD=alice-pw"}
	must("one\ntwo\n", aliceEnv, append([]string{"produce", topic}, alice...)...)
	out := must("", aliceEnv, append([]string{"consume", topic, "-e"}, alice...)...)
	if out != "one\ntwo\n" {
		t.Fatalf("gregor consume as alice: %q", out)
	}

	// ANONYMOUS on the PLAINTEXT listener may not read the ACLs.
	if out, err := gregor("", nil, "acl", "list", "-b", s.plaintext); err == nil || !strings.Contains(out, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("gregor acl list as ANONYMOUS: %v\n%s", err, out)
	}
	// Without her WRITE ACL alice's produce is refused.
	must("", superUser, "acl", "delete", "--principal", "User:alice", "--topic", topic)
	if out, err := gregor("three\n", aliceEnv, append([]string{"produce", topic, "--acks", "1"}, alice...)...); err == nil ||
		!strings.Contains(out, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("gregor produce after the ACL was deleted: %v\n%s", err, out)
	}
	// With her credential deleted she cannot log in.
	must("", superUser, "user", "scram", "delete", "alice", "--mechanism", "SCRAM-SHA-512")
	if out, err := gregor("", aliceEnv, append([]string{"topic", "list"}, alice...)...); err == nil || !strings.Contains(out, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("gregor topic list with a deleted credential: %v\n%s", err, out)
	}
}

// The admin HTTP listener of a broker configured as the README says: HTTPS
// with basic auth, the record browser and the profiler off, and /metrics
// (with the security counters) on a separate unauthenticated listener;
// the health probes stay open.
func TestSecurityAdminListener(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t)
	_, cert, key := ca.Issue(t, "admin", []string{"localhost"}).WriteFiles(t, dir, "admin")
	hash, err := bcrypt.GenerateFromPassword([]byte("ops-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	b := brokertest.Start(t, map[string]string{
		"gregor.admin.tls.certificate":   cert,
		"gregor.admin.tls.key":           key,
		"gregor.admin.auth":              "basic",
		"gregor.admin.auth.users":        "ops:" + string(hash),
		"gregor.admin.metrics.listen":    "127.0.0.1:0",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found": "false",
	})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	get := func(url, user, password string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	base := "https://" + b.AdminAddr().String()
	for _, c := range []struct {
		path, user, password string
		want                 int
	}{
		{"/v1/topics", "", "", http.StatusUnauthorized},
		{"/v1/topics", "ops", "wrong", http.StatusUnauthorized},
		{"/v1/topics", "ops", "ops-pw", http.StatusOK},
		{"/metrics", "", "", http.StatusUnauthorized},
		{"/livez", "", "", http.StatusOK},
		{"/readyz", "", "", http.StatusOK},
		{"/debug/pprof/", "ops", "ops-pw", http.StatusNotFound},
		{"/v1/partitions/any/0/records", "ops", "ops-pw", http.StatusForbidden},
	} {
		if got, body := get(base+c.path, c.user, c.password); got != c.want {
			t.Errorf("GET %s as %q: %d, want %d\n%.300s", c.path, c.user, got, c.want, body)
		}
	}
	// Plain HTTP to the HTTPS listener gets nothing of the broker's.
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + b.AdminAddr().String() + "/v1/topics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP to the HTTPS admin listener was served")
		}
	}
	// A refused client shows in the metrics of the separate listener, which
	// serves nothing else.
	anon := kadm.NewClient(b.Client())
	if _, err := anon.CreateTopic(testCtx(t, 30*time.Second), 1, 1, nil, uniqueTopic(t)); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("ANONYMOUS CreateTopics: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	metrics := b.Admin().MetricsAddr().String()
	if v := metricValue(t, metrics, "gregor_authorizer_denied_requests_total", `request="CreateTopics"`); v < 1 {
		t.Errorf("gregor_authorizer_denied_requests_total{request=CreateTopics} = %v, want at least 1", v)
	}
	if v := metricValue(t, metrics, "kafka_server_socket_server_metrics_successful_authentication_total", `listener="PLAINTEXT"`); v < 1 {
		t.Errorf("successful_authentication_total{listener=PLAINTEXT} = %v, want at least 1", v)
	}
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + metrics + "/v1/topics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/topics on the metrics listener: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
}

// Certificates renewed in place: the key store file is replaced and an
// AlterConfigs of the broker's listener.name.ssl.ssl.keystore.location to
// the same path (as Kafka's kafka-configs.sh --entity-type brokers does)
// makes new connections get the new certificate, open ones keep theirs; a
// certificate for another subject is refused with INVALID_REQUEST (Kafka's
// ConfigAdminManager answers a failed dynamic broker config validation so,
// KAFKA-13609) and the certificate in use stays.
func TestSecurityKeyStoreReload(t *testing.T) {
	s := startSecure(t)
	ctx := testCtx(t, 60*time.Second)
	adm := s.admin(t)
	keystore := filepath.Join(s.dir, "broker.pem")
	clientTLS := s.tls()
	clientTLS.Certificates = []tls.Certificate{s.client.TLS(t)}
	served := func() *tls.Conn {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.ssl, clientTLS)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	serial := func(c *tls.Conn) string { return c.ConnectionState().PeerCertificates[0].SerialNumber.String() }
	before := served()
	alter := func() error {
		t.Helper()
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "listener.name.ssl.ssl.keystore.location", Value: &keystore}}, 1) // brokertest's node.id
		if err != nil {
			return err
		}
		return res[0].Err
	}
	renewed := s.ca.Issue(t, "broker", []string{"localhost"})
	renewed.WriteFiles(t, s.dir, "broker")
	if err := alter(); err != nil {
		t.Fatalf("AlterConfigs of the same key store path: %v", err)
	}
	after := served()
	if serial(after) != renewed.Leaf.SerialNumber.String() || serial(after) == serial(before) {
		t.Fatalf("after the reload a new connection got certificate %s, want the renewed %s", serial(after), renewed.Leaf.SerialNumber)
	}
	// The connection opened before still works, on its old certificate.
	r := &rawConn{t: t, c: before, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e-raw"))}
	r.expectWorks("a connection opened before the reload")

	other := s.ca.Issue(t, "intruder", []string{"localhost"})
	other.WriteFiles(t, s.dir, "broker")
	if err := alter(); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("a key store with another subject: %v, want INVALID_REQUEST", err)
	}
	if got := serial(served()); got != renewed.Leaf.SerialNumber.String() {
		t.Fatalf("after a refused reload the listener serves certificate %s, want %s", got, renewed.Leaf.SerialNumber)
	}
}

// SaslHandshake v0 (KIP-43): after the handshake the PLAIN token goes as a
// bare size-prefixed frame and the broker answers with a bare (empty)
// token; Kafka requests follow, authenticated. A wrong password gets no
// answer: the connection closes.
func TestSecuritySaslHandshakeV0(t *testing.T) {
	s := startSecure(t)
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Version, handshake.Mechanism = 0, "PLAIN"
	token := func(r *rawConn, password string) {
		tok := []byte("\x00admin\x00" + password)
		r.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	}
	for _, addr := range []string{s.sasl, s.saslSSL} {
		dial := func() *rawConn {
			r := dialRaw(t, addr)
			if addr == s.saslSSL {
				r.c = tls.Client(r.c, s.tls())
			}
			return r
		}
		r := dial()
		if resp := r.roundTrip(handshake).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("%s: SaslHandshake v0: %v", addr, kerr.ErrorForCode(resp.ErrorCode))
		}
		token(r, "admin-secret")
		var size [4]byte
		r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(r.c, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("%s: the answer to a PLAIN token: %v %v, want an empty token", addr, size, err)
		}
		resp := r.roundTrip(kmsgMetadata()).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 {
			t.Fatalf("%s: Metadata after a v0 authentication: %+v", addr, resp.Brokers)
		}

		r = dial()
		r.roundTrip(handshake)
		token(r, "wrong")
		r.expectClosed("a wrong PLAIN token after SaslHandshake v0")
	}
}
