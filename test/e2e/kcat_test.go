package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
)

// kcat runs kcat with args (and stdin when not empty) under a deadline and
// returns its stdout; a non-zero exit fails the test with stderr.
func kcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (scripts/test.sh installs it with apt-get)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %s: no exit within 20s\nstdout:\n%s\nstderr (last 2000 bytes):\n%s", strings.Join(args, " "), stdout.String(), tail(stderr.String(), 2000))
	}
	if err != nil {
		t.Fatalf("kcat %s: %v\nstdout:\n%s\nstderr (last 2000 bytes):\n%s", strings.Join(args, " "), err, stdout.String(), tail(stderr.String(), 2000))
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kcat (librdkafka) lists metadata, produces keyed records, consumes them
// from the beginning, consumes from a timestamp and looks offsets up by
// timestamp.
func TestKcat(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (scripts/test.sh installs it with apt-get)")
	}
	b := brokertest.Start(t, nil)
	addr := b.Addr().String()

	t.Run("metadata", func(t *testing.T) {
		t.Parallel()
		topic := uniqueTopic(t)
		createTopic(t, addr, topic, 1, nil)
		out := kcat(t, "", "-b", addr, "-L")
		for _, want := range []string{
			"1 brokers:",
			"broker 1 at " + addr,
			fmt.Sprintf("topic %q with 1 partitions:", topic),
			"partition 0, leader 1, replicas: 1, isrs: 1",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("kcat -L output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("produce and consume with keys", func(t *testing.T) {
		t.Parallel()
		topic := uniqueTopic(t)
		createTopic(t, addr, topic, 1, nil)
		kcat(t, "k1:v1\nk2:v2\nk3:value with spaces\n", "-b", addr, "-P", "-t", topic, "-K:")
		out := kcat(t, "", "-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-f", `%k=%s@%o\n`)
		want := "k1=v1@0\nk2=v2@1\nk3=value with spaces@2\n"
		if out != want {
			t.Fatalf("kcat consumed:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("timestamps", func(t *testing.T) {
		t.Parallel()
		topic := uniqueTopic(t)
		createTopic(t, addr, topic, 1, nil)
		ctx := testCtx(t, 30*time.Second)
		base := time.Now().Add(-time.Hour).Truncate(time.Second)
		cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
		for i := 0; i < 3; i++ {
			produceSync(ctx, t, cl, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: base.Add(time.Duration(i) * 10 * time.Second)})
		}
		at := base.Add(5 * time.Second).UnixMilli()

		out := kcat(t, "", "-b", addr, "-C", "-t", topic, "-o", fmt.Sprintf("s@%d", at), "-e", "-f", `%o %s %T\n`)
		want := fmt.Sprintf("1 v1 %d\n2 v2 %d\n", base.Add(10*time.Second).UnixMilli(), base.Add(20*time.Second).UnixMilli())
		if out != want {
			t.Fatalf("kcat -o s@%d consumed:\n%s\nwant:\n%s", at, out, want)
		}

		out = kcat(t, "", "-b", addr, "-Q", "-t", fmt.Sprintf("%s:0:%d", topic, at))
		if want := fmt.Sprintf("%s [0] offset 1", topic); !strings.Contains(out, want) {
			t.Fatalf("kcat -Q output:\n%s\nwant a line with %q", out, want)
		}
		out = kcat(t, "", "-b", addr, "-Q", "-t", fmt.Sprintf("%s:0:%d", topic, base.UnixMilli()-1))
		if want := fmt.Sprintf("%s [0] offset 0", topic); !strings.Contains(out, want) {
			t.Fatalf("kcat -Q output:\n%s\nwant a line with %q", out, want)
		}
	})
}
