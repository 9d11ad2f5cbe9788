package txn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/internal/topicpart"
)

// State is a transaction's state (Kafka's TransactionState), persisted as
// its id in TransactionLogValue.TransactionStatus.
type State int8

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	// Dead is transient while a transactional id is expired; only its
	// tombstone is written.
	Dead
	// PrepareEpochFence is transient while an open transaction is fenced;
	// the abort it leads to is what is written.
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
	"Dead", "PrepareEpochFence"}

// String is Kafka's name for the state (DescribeTransactions,
// ListTransactions).
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// ParseState reads a state name as ListTransactions filters carry it.
func ParseState(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// validPrevious is Kafka's TransactionState.validPreviousStates (the TV2
// rule included: a client unsure of the server's state may abort from
// Empty or Complete*).
var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// canTransition reports whether from → to is in Kafka's state graph.
func canTransition(from, to State) bool { return slices.Contains(validPrevious[to], from) }

// expirationAllowed: the transactional id may expire in this state.
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// preparing: the outcome is decided and markers are (being) written.
func (s State) preparing() bool { return s == PrepareCommit || s == PrepareAbort }

// maxEpoch is Short.MAX_VALUE; an epoch at or above maxEpoch-1 is exhausted
// (Kafka's isEpochExhausted): the last value is kept so the coordinator can
// always fence.
const maxEpoch = 1<<15 - 1

func epochExhausted(e int16) bool { return e >= maxEpoch-1 }

// Txn is one transactional id's metadata (Kafka's TransactionMetadata).
type Txn struct {
	ID            string
	ProducerID    int64
	ProducerEpoch int16
	// LastProducerEpoch is the epoch before the last bump, for KIP-360
	// retries; in memory only (-1 after a load), as in Kafka.
	LastProducerEpoch int16
	// PrevProducerID and NextProducerID track a producer id rotation at
	// epoch exhaustion (TransactionLogValue tags 0 and 1).
	PrevProducerID int64
	NextProducerID int64
	TimeoutMs      int32
	State          State
	// Partitions are the transaction's partitions, sorted.
	Partitions []topicpart.TopicPartition
	// StartMs is when the first partition was added (-1 when none is);
	// LastUpdateMs the last transition.
	StartMs      int64
	LastUpdateMs int64
	// ClientTV is the transaction version the client speaks (TV2: EndTxn v5+).
	ClientTV int16
	extra    valueExtra // what the stored value had that Gregor does not read
}

func (t *Txn) clone() *Txn {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	return &c
}

func (t *Txn) hasPartition(tp topicpart.TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(t.Partitions, tp, compareTP)
	return ok
}

// addPartitions merges tps into the sorted set.
func (t *Txn) addPartitions(tps []topicpart.TopicPartition) {
	for _, tp := range tps {
		if i, ok := slices.BinarySearchFunc(t.Partitions, tp, compareTP); !ok {
			t.Partitions = slices.Insert(t.Partitions, i, tp)
		}
	}
}

func compareTP(a, b topicpart.TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// Transaction versions (the transaction.version feature).
const (
	TV0 int16 = 0
	TV1 int16 = 1
	TV2 int16 = 2
)
