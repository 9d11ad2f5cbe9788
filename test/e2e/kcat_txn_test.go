package e2e

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/topicpart"
	"github.com/gregor-broker/gregor/internal/txn"
)

// kcat (librdkafka 2.0, transactions v1: InitProducerId, AddPartitionsToTxn,
// EndTxn v1 with the epoch kept) produces in a transaction that it commits
// when its input ends. Killed while producing (SIGKILL; an interrupt does
// not end its transaction either), kcat leaves its transaction open: the
// coordinator aborts it at its transaction.timeout.ms (fencing the
// producer); until then `gregor why lso` names it as the open transaction
// holding the partition's last stable offset, with the time left before its
// timeout. A read_committed kcat
// consumer then sees the committed records only, a read_uncommitted one all
// of them (the markers hidden by librdkafka).
func TestKcatTransactions(t *testing.T) {
	t.Parallel()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (scripts/test.sh installs it with apt-get)")
	}
	b := brokertest.Start(t, map[string]string{"transaction.state.log.num.partitions": "3",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
	addr := b.Addr().String()
	topic := uniqueTopic(t)
	createTopic(t, addr, topic, 2, nil)

	kcat(t, "c1\nc2\nc3\nc4\n", "-b", addr, "-P", "-t", topic, "-X", "transactional.id=kcat-commit")

	// A transaction interrupted half way. kcat reads its input through
	// stdio's buffer, so enough lines to fill it are written for some to be
	// produced before the interrupt.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-b", addr, "-P", "-t", topic, "-X", "transactional.id=kcat-abort",
		"-X", "transaction.timeout.ms=6000")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr, cmd.Stdout = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	leos := func() int64 {
		var n int64
		for p := range int32(2) {
			if part, ok := b.Replicas().Get(topicpart.TopicPartition{Topic: topic, Partition: p}); ok {
				n += part.Log.LogEndOffset()
			}
		}
		return n
	}
	before := leos()
	for i := range 3000 {
		fmt.Fprintf(stdin, "a%04d\n", i)
	}
	for deadline := time.Now().Add(15 * time.Second); leos() == before; {
		if time.Now().After(deadline) {
			t.Fatal("kcat's transactional records never reached the log")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stdin.Close()

	// The hung transaction, explained by the real CLI while it is open.
	cli := gregorCLI{t: t, p: &proc{t: t, addr: addr, admin: "http://" + b.AdminAddr().String()}}
	explained := ""
	for p := range 2 {
		out := cli.run("why", "lso", fmt.Sprintf("%s/%d", topic, p))
		if strings.Contains(out, "[OPEN]") {
			explained = out
		}
	}
	for _, want := range []string{"[OPEN] from offset", `transaction "kcat-abort"`, "times out in"} {
		if !strings.Contains(explained, want) {
			t.Errorf("gregor why lso after kcat was killed lacks %q:\n%s", want, explained)
		}
	}
	t.Logf("gregor why lso after kcat was killed mid-transaction:\n%s", explained)

	// Both transactions ended (the second at its timeout): wait until no
	// partition's LSO is held.
	for deadline := time.Now().Add(15 * time.Second); ; {
		held := false
		for p := range int32(2) {
			part, _ := b.Replicas().Get(topicpart.TopicPartition{Topic: topic, Partition: p})
			held = held || part.Log.LastStableOffset() != part.Log.LogEndOffset()
		}
		if !held {
			break
		}
		if time.Now().After(deadline) {
			list, err := b.Transactions().List(context.Background(), txn.ListFilter{MinDurationMs: -1})
			t.Fatalf("a transaction still holds the last stable offset; the coordinator has %+v (%v)", list, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	consume := func(isolation string) []string {
		out := kcat(t, "", "-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-X", "isolation.level="+isolation, "-f", `%s\n`)
		vals := strings.Fields(out)
		sort.Strings(vals)
		return vals
	}
	if got := consume("read_committed"); strings.Join(got, " ") != "c1 c2 c3 c4" {
		t.Fatalf("read_committed consumed %v, want the committed c1-c4", got)
	}
	aborted, committed := 0, 0
	for _, v := range consume("read_uncommitted") {
		switch v[0] {
		case 'a':
			aborted++
		case 'c':
			committed++
		}
	}
	if committed != 4 || aborted == 0 {
		t.Fatalf("read_uncommitted consumed %d committed and %d aborted records, want 4 and the aborted ones", committed, aborted)
	}
}
