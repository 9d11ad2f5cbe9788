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

// An operator who asks for authentication and authorization must never get
// an open broker: the server.properties (an authorizer, super users,
// no access without ACLs, a SASL_PLAINTEXT listener) stops the start with a
// message naming each setting, and nothing listens on its PLAINTEXT port.
func TestServeRefusesSecurityItCannotProvide(t *testing.T) {
	plain, sasl := freePort(t), freePort(t)
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
`, plain, sasl)
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	out := serveMustFail(t, "--config", file, "--data-dir", t.TempDir())
	for _, want := range []string{"authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found",
		"sasl.enabled.mechanisms", "listener.name.sasl_plaintext.plain.sasl.jaas.config",
		"listener SASL_PLAINTEXT (SASL_PLAINTEXT)", "does not implement TLS, SASL or ACLs"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "user_admin") || strings.Contains(out, "secret") {
		t.Errorf("the refusal prints a JAAS secret:\n%s", out)
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", plain), time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on the PLAINTEXT port %d", plain)
	}

	// A TLS-only listener, and a lone ssl.client.auth, are refused too.
	out = serveMustFail(t, "--data-dir", t.TempDir(),
		"--set", fmt.Sprintf("listeners=CLIENTS://127.0.0.1:%d", plain),
		"--set", "listener.security.protocol.map=CLIENTS:SSL,CONTROLLER:PLAINTEXT")
	if !strings.Contains(out, "listener CLIENTS (SSL)") {
		t.Errorf("an SSL listener is not named:\n%s", out)
	}
	out = serveMustFail(t, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--set", "ssl.client.auth=required")
	if !strings.Contains(out, "ssl.client.auth") {
		t.Errorf("ssl.client.auth is not named:\n%s", out)
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
