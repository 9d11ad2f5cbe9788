// Package source is the broker's read model for people: the admin.Source
// that the JSON API (/v1/) and the web console read. It describes the
// broker's in-process state, never asking over the Kafka protocol, and owns
// no state of its own beyond the time it started; it writes nothing but an
// unclean election's acknowledgement.
//
// What each view is built from:
//
//   - topics and their configs: the metadata image (Deps.Metadata), with
//     configs described as DescribeConfigs does (config.DescribeTopic);
//   - a partition's offsets, segments and retention plan: one log.Snapshot
//     per partition, so log start ≤ LSO ≤ HW ≤ LEO holds within a view, the
//     segments sum to its size, and the retention plan (log.PlanRetention)
//     is the one the next retention pass applies;
//   - compaction: the cleaner's per-partition status (Deps.Cleaner);
//   - groups and committed offsets: the group coordinator (Deps.Groups),
//     whose calls run on its owner goroutines and honour the request's
//     context; lag = HW − committed. While __consumer_offsets loads, group
//     views answer admin.ErrUnavailable and views that only show lag beside
//     their own state (topics, a partition) go without it;
//   - brokers: the metadata image's registrations (state from fenced and
//     in-controlled-shutdown, fenced first: a broker keeps the latter until
//     it registers again);
//   - the metadata quorum: Deps.Quorum (the broker asks the quorum leader
//     with DescribeQuorum, bounded by a timeout, and adds its own raft
//     state);
//   - transactions holding a partition's last stable offset back: the log's
//     OpenTransactions and, for each producer id, the transaction
//     coordinator's view (Deps.Txns), classified by txn.Diagnose (the
//     hanging-transaction detector); PartitionView.Transactions and
//     /v1/transactions (in a cluster Deps.Txns also asks the other brokers'
//     coordinators about producer ids its own does not know); the
//     transactions under way (Ongoing, Prepare*) on every coordinator
//     Deps.Txns can ask, the others named in OngoingView.Errors; the
//     automatic abort's state (Deps.Orphans, *txn.OrphanAborter);
//   - log dirs: FS.DiskUsage for each dir, the log manager's logs in it and
//     the stray logs it set aside there; which dir holds the metadata;
//   - unclean elections (unclean.go): the image's PartitionImage.Unclean,
//     plus, where this broker hosts the partition, the offset at which its
//     log's leader epoch cache starts the election's epoch (the elected
//     replica's log end then). The one write, acknowledging one, goes to
//     the active controller in this process (Deps.AckUnclean) or answers
//     admin.NotControllerError naming it.
//
// Records pages (records.go) read the log directly, up to the high
// watermark or, read_committed, the last stable offset, bounded by
// max_records (≤ 1000), max_bytes (≤ 4 MiB, both of batch bytes scanned and
// of keys, values and headers returned past the first record) and the
// request's context, with the log's capped decompression. Control batches
// are scanned, not shown. A retention pass or DeleteRecords that moves the
// log start offset past a scan makes it resume from the new log start (at
// most three times).
//
// # Concurrency
//
// A Source holds no locks: every method reads through its Deps, which are
// safe for concurrent use, so any number of HTTP handlers may call it at
// once.
package source
