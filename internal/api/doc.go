// Package api answers Kafka requests: one file per API key, each headed by
// the versions it serves (Kafka 4.2's ranges, franz-go kversion.V4_2_0) and
// any deviation from Kafka. A file decodes what it needs from the kmsg
// request, calls the domain packages (controller, replica, log, config,
// group) and encodes the kmsg response. The package keeps no state of its
// own: fetch sessions live in replica, producer ids in the controller,
// consumer groups and committed offsets in group (group_common.go holds the
// helpers of the group coordinator APIs). The one thing it holds is a
// bounded pool of buffers (fetch_buffers.go): Fetch reads large record sets
// into them and answers with a server.BulkResponse, which the server writes
// from those buffers with one vectored write and then releases, so record
// bytes are never cleared, copied by kmsg or left to the garbage collector.
//
// ApiVersions advertises exactly the keys registered here with their ranges;
// the server closes connections that use anything else.
//
// Errors from the domain are turned into Kafka codes by one table
// (errors.go): kerr values pass through, record/log sentinels map to their
// Kafka codes, anything else is UNKNOWN_SERVER_ERROR and logged.
package api
