package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveMustFail runs `gregor serve` with args, which must exit non-zero
// within 30 s without ever printing the serving banner, and returns what it
// printed.
func serveMustFail(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gregorBin, append([]string{"serve", "--admin-listen", "127.0.0.1:0", "--log-format", "text"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gregor serve %v still running after 30s:\n%s", args, out.String())
	}
	if err == nil {
		t.Fatalf("gregor serve %v exited 0:\n%s", args, out.String())
	}
	if strings.Contains(out.String(), "gregor is serving") {
		t.Fatalf("gregor serve %v served before failing:\n%s", args, out.String())
	}
	return out.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// An operator who asks for protection Gregor cannot give must never get an
// open broker: each such configuration stops the start with a message
// naming what is refused (and no JAAS secret), and nothing listens on its
// PLAINTEXT port.
func TestServeRefusesSecurityItCannotProvide(t *testing.T) {
	plain, sasl := freePort(t), freePort(t)
	base := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
`, plain, sasl)
	for _, tc := range []struct{ name, extra, want string }{
		{"Kerberos (sasl.enabled.mechanisms defaults to GSSAPI)", "", "GSSAPI"},
		{"an authorizer class Gregor does not have", "sasl.enabled.mechanisms=PLAIN\nauthorizer.class.name=com.example.Authorizer\n", "com.example.Authorizer"},
		{"a custom principal builder", "sasl.enabled.mechanisms=PLAIN\nprincipal.builder.class=com.example.Builder\n", "principal.builder.class"},
		{"delegation tokens", "sasl.enabled.mechanisms=PLAIN\ndelegation.token.secret.key=k\n", "delegation.token.secret.key"},
		{"a JAAS-less PLAIN listener", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\nlistener.name.sasl_plaintext.plain.sasl.jaas.config=\n", "sasl.jaas.config"},
	} {
		file := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(file, []byte(base+tc.extra), 0o644); err != nil {
			t.Fatal(err)
		}
		out := serveMustFail(t, "--config", file, "--data-dir", t.TempDir())
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: the refusal does not name %q:\n%s", tc.name, tc.want, out)
		}
		if strings.Contains(out, "user_admin") || strings.Contains(out, "secret\"") {
			t.Errorf("%s: the refusal prints a JAAS secret:\n%s", tc.name, out)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", plain), time.Second); err == nil {
			c.Close()
			t.Errorf("%s: something listens on the PLAINTEXT port %d", tc.name, plain)
		}
	}

	// An SSL listener needs a PEM key store: without one, or with Kafka's
	// default JKS type, the start stops.
	out := serveMustFail(t, "--data-dir", t.TempDir(),
		"--set", fmt.Sprintf("listeners=CLIENTS://127.0.0.1:%d", plain),
		"--set", "listener.security.protocol.map=CLIENTS:SSL,CONTROLLER:PLAINTEXT")
	if !strings.Contains(out, "listener CLIENTS (SSL)") || !strings.Contains(out, "PEM") {
		t.Errorf("an SSL listener without a key store is not explained:\n%s", out)
	}
	// The CONTROLLER listener (node to node) is PLAINTEXT or SSL.
	out = serveMustFail(t, "--data-dir", t.TempDir(),
		"--set", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", plain, sasl),
		"--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL")
	if !strings.Contains(out, "CONTROLLER listener uses security protocol SASL_SSL") {
		t.Errorf("SASL on the CONTROLLER listener is not refused:\n%s", out)
	}
	out = serveMustFail(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--set", "gregor.admin.auth=basic")
	if !strings.Contains(out, "gregor.admin.auth.users") {
		t.Errorf("admin basic auth without users is not explained:\n%s", out)
	}
}

// A broker config that could never create __consumer_offsets stops the
// start, rather than failing every group request at run time.
func TestServeRefusesOffsetsTopicConfigThatCanNeverWork(t *testing.T) {
	out := serveMustFail(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--set", "offsets.topic.segment.bytes=1000")
	for _, want := range []string{"__consumer_offsets", "offsets.topic.segment.bytes=1000", "segment.bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out)
		}
	}
}
