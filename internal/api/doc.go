// Package api answers Kafka requests: one file per API key, each headed by
// the versions it serves (Kafka 4.2's ranges, franz-go kversion.V4_2_0) and
// any deviation from Kafka. A file decodes what it needs from the kmsg
// request, calls the domain packages (controller, replica, log, config,
// group) and encodes the kmsg response. The package keeps no state of its
// own: fetch sessions live in replica, producer ids in the controller,
// consumer groups and committed offsets in group (group_common.go holds the
// helpers of the group coordinator APIs), transactions in txn (txn_common.go
// holds the per-version error rewrites and MarkerWriter, the leader's side
// of WriteTxnMarkers, which the transaction coordinator also writes local
// markers through; txn_peers.go's CoordinatorPeers asks other brokers'
// coordinators about a producer id for the hanging-transaction detector). Fetch does not read large record
// sets at all (fetch_bulk.go): it answers with a server.BulkResponse that
// names where in its segment file each one lies, and the server reads them
// through a bounded buffer while it writes the response, so a fetch's memory
// does not grow with what it asks for.
//
// Two handlers: Handler serves the client listener, ControllerHandler the
// CONTROLLER listener (controller_handler.go: the requests Kafka's
// ControllerApis serves, answered by this node's controller). A request only
// the controller can answer (CreateTopics and the other admin writes) is
// forwarded by Handler as it came, at its version, to the active controller
// (forward.go, ControllerRouter), and answered once this broker has
// published the metadata the answer holds at. Data requests are answered
// from the partitions this broker leads; others are NOT_LEADER_OR_FOLLOWER
// with the current leader as KIP-951's hint (Produce v10+, Fetch v12+), read
// from the metadata when the answer is made (a produce that waited for
// acks=all while the leadership moved names the new leader); the
// exception is ListOffsets with Kafka's debugging replica id (-2), which any
// replica answers from its own log. One deviation: a follower's fetch that
// names a leader epoch newer than this broker's replica has (its metadata is
// ahead: the leadership is on its way here) waits, within its max wait, for
// this broker to lead in that epoch and is then served; Kafka answers
// UNKNOWN_LEADER_EPOCH at once and its follower backs off
// replica.fetch.backoff.ms, a second in which the partition takes no
// acks=all write. Still behind at the max wait, it is answered
// UNKNOWN_LEADER_EPOCH.
//
// Handlers read the image the broker has published, which trails the
// metadata log by what is committed but not yet applied and published.
// AddPartitionsToTxn (a producer's, or another broker's verification of a
// partition it leads) and TxnOffsetCommit do not answer
// UNKNOWN_TOPIC_OR_PARTITION from a trailing image: they first wait (at
// most a second) until this broker has published everything committed
// (txn_common.go, caughtUpImage).
//
// ApiVersions advertises exactly the keys registered here with their ranges;
// the server closes connections that use anything else.
//
// Security: Handle first asks the connection's auth.Session (made by the
// listener's Secure hook, in ConnInfo.Session) to admit the request; an
// unauthenticated SASL connection may send only ApiVersions, SaslHandshake
// and SaslAuthenticate, and an expired session only a re-authentication,
// else the connection is closed. Every handler then authorizes what it
// touches as Kafka's KafkaApis does (authorize.go: the operation and
// resource per API, Kafka's error codes, authorization before existence so
// a topic's existence never leaks); without an authorizer everything is
// allowed. A request forwarded to the controller is authorized here first
// (forward_authz.go), item by item where Kafka's ControllerApis does: only
// what the principal may do is forwarded, since a forwarded request
// carries no principal (the CONTROLLER listener admits nodes, by their
// connection's principal, before ControllerHandler sees a request). CreateAcls, DeleteAcls and
// AlterUserScramCredentials are forwarded like the other admin writes;
// DescribeAcls and DescribeUserScramCredentials answer from this broker's
// authorizer and published image.
//
// Errors from the domain are turned into Kafka codes by one table
// (errors.go): kerr values pass through, record/log sentinels map to their
// Kafka codes, anything else is UNKNOWN_SERVER_ERROR and logged.
package api
