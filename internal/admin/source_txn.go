package admin

// OngoingView is every transaction under way in the cluster, as the
// coordinators that could be asked describe them.
type OngoingView struct {
	Transactions []OngoingTransaction `json:"transactions"`
	// Errors name the coordinators that could not be asked (loading,
	// unreachable): their transactions are missing.
	Errors []string `json:"errors,omitempty"`
}

// OngoingTransaction is one transaction a transaction coordinator has under
// way (Ongoing, or decided with its markers being written), as
// DescribeTransactions describes it.
type OngoingTransaction struct {
	TransactionalID string `json:"transactional_id"`
	// Coordinator is the broker whose coordinator has it.
	Coordinator   int32 `json:"coordinator"`
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	// State is Kafka's: Ongoing, PrepareCommit, PrepareAbort.
	State     string `json:"state"`
	TimeoutMs int32  `json:"timeout_ms"`
	// StartMs is when the transaction began (the coordinator's clock);
	// AgeMs counts from it.
	StartMs      int64             `json:"start_ms"`
	AgeMs        int64             `json:"age_ms"`
	LastUpdateMs int64             `json:"last_update_ms"`
	Partitions   []TopicPartitions `json:"partitions"`
}

// AutoAbortView is the automatic abort of orphaned transactions
// (gregor.transaction.orphan.abort.enable): its settings, the orphans it
// watches on the partitions this broker leads, and what it has aborted.
type AutoAbortView struct {
	Enabled bool `json:"enabled"`
	// An orphan is aborted once it has been classified orphan at every
	// check for MinOrphanMs (gregor.transaction.orphan.abort.min.orphan.ms)
	// and is older than MinAgeMs (transaction.max.timeout.ms).
	MinOrphanMs     int64 `json:"min_orphan_ms"`
	MinAgeMs        int64 `json:"min_age_ms"`
	CheckIntervalMs int64 `json:"check_interval_ms"`
	Checks          int64 `json:"checks"`
	LastCheckMs     int64 `json:"last_check_ms"` // -1 before the first
	// AbortedTotal counts the orphans aborted since the broker started
	// (gregor_transaction_orphans_aborted_total).
	AbortedTotal int64           `json:"aborted_total"`
	Watched      []WatchedOrphan `json:"watched"`
	// Recent are the latest automatic aborts, newest last (at most 100),
	// failed attempts included.
	Recent []AutoAbortRecord `json:"recent"`
}

// WatchedOrphan is an orphan the automatic abort watches.
type WatchedOrphan struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	ProducerID       int64  `json:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch"`
	CoordinatorEpoch int32  `json:"coordinator_epoch"`
	FirstOffset      int64  `json:"first_offset"`
	// OrphanSinceMs is when it was first classified orphan without a break
	// since; DueMs when both conditions hold (it is aborted at the first
	// check after, when enabled).
	OrphanSinceMs int64  `json:"orphan_since_ms"`
	AgeMs         int64  `json:"age_ms"`
	DueMs         int64  `json:"due_ms"`
	Explanation   string `json:"explanation"`
}

// AutoAbortRecord is one automatic abort: the ABORT marker written (or, with
// Error, the write that failed and is retried at the next check).
type AutoAbortRecord struct {
	WatchedOrphan
	AtMs  int64  `json:"at_ms"`
	Error string `json:"error,omitempty"`
}
