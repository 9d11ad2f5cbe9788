package cluster

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceErrLog is a kgo logger that counts the errors the producer's
// requests and batches were answered (kgo retries them without failing a
// record, so only its log shows them), NOT_LEADER_OR_FOLLOWER answers
// naming the new leader included.
type produceErrLog struct {
	mu    sync.Mutex
	kinds map[string]int
	// fatal are errors Kafka does not call retriable.
	fatal []error
}

func (l *produceErrLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *produceErrLog) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if strings.Contains(msg, "kip-951 not_leader_for_partition") {
		// Answered NOT_LEADER_OR_FOLLOWER with the new leader (KIP-951):
		// kgo moves the partition there at once, logging no err.
		l.mu.Lock()
		l.kinds["NOT_LEADER_OR_FOLLOWER with the new leader (KIP-951)"]++
		l.mu.Unlock()
		return
	}
	if !strings.Contains(msg, "produc") && !strings.Contains(msg, "batch") {
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		err, ok := keyvals[i+1].(error)
		if keyvals[i] != "err" || !ok {
			continue
		}
		l.mu.Lock()
		l.kinds[errKind(err)]++
		var ke *kerr.Error
		if errors.As(err, &ke) && !ke.Retriable {
			l.fatal = append(l.fatal, err)
		}
		l.mu.Unlock()
	}
}

func (l *produceErrLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, n := range l.kinds {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// A rolling restart, as an operator upgrades a cluster: RF 3, min ISR 2,
// an acks=all producer throughout; each node in turn is stopped by SIGTERM
// (controlled shutdown: it exits 0), started again, and the next waits
// until every partition's ISR is whole again. Nothing acknowledged is
// lost or moved, the replicas end byte-identical, no record fails, and
// the producer is answered retriable errors only (logged with counts).
// GREGOR_LONG=1 rolls the cluster three times.
func TestReplicationRollingRestart(t *testing.T) {
	start := time.Now()
	c := newCluster(t, 3)
	const topic = "rolling"
	createRF3(t, c, topic)
	rounds, pause := 1, 20*time.Millisecond // ~2,500 records/s offered
	if os.Getenv("GREGOR_LONG") != "" {
		rounds, pause = 3, 5*time.Millisecond
	}
	errs := &produceErrLog{kinds: map[string]int{}}
	stop := make(chan struct{})
	lp := startLoadPaced(t, c, topic, stop, 50, pause, 0, kgo.WithLogger(errs))
	waitAcks(t, lp, 200)
	var steps []string
	for r := range rounds {
		for id := int32(1); id <= 3; id++ {
			t0 := time.Now()
			before := lp.n.Load()
			if err := c.sigterm(id); err != nil {
				t.Fatalf("round %d: node %d after SIGTERM: %v (want exit status 0)", r, id, err)
			}
			stopped := time.Since(t0)
			c.start(id)
			c.waitReady(id, 60*time.Second)
			// Timed from another node over a fresh client each poll (kgo
			// answers metadata from its cache for up to 5 s).
			waitISRFrom(t, c, 1+id%3, topic, 3)
			steps = append(steps, fmt.Sprintf("node %d: exited 0 in %v, ISR whole %v after the signal, %d acknowledged meanwhile",
				id, stopped.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), lp.n.Load()-before))
			waitAcks(t, lp, 200)
		}
	}
	close(stop)
	select {
	case <-lp.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the producer did not finish within 90s")
	}
	lp.mu.Lock()
	acked, failed := lp.acked, lp.failed
	lp.mu.Unlock()
	checkReadBack(t, c, topic, acked)
	checkReplicasEqual(t, c, topic, 3)
	t.Logf("%d rolling restart(s): %s", rounds, strings.Join(steps, "; "))
	t.Logf("%d records acknowledged, %d failed; errors the producer was answered: %s; test %v",
		len(acked), failed, errs, time.Since(start).Round(time.Millisecond))
	if failed > 0 {
		t.Errorf("%d records failed during a rolling restart", failed)
	}
	errs.mu.Lock()
	defer errs.mu.Unlock()
	if len(errs.fatal) > 0 {
		t.Errorf("the producer was answered non-retriable errors: %v", errs.fatal)
	}
}
