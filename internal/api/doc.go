// Package api answers Kafka requests: one file per API key, each headed by
// the versions it serves (Kafka 4.2's ranges, franz-go kversion.V4_2_0) and
// any deviation from Kafka. A file decodes what it needs from the kmsg
// request, calls the domain packages (controller, replica, log, config,
// group) and encodes the kmsg response. The package keeps no state of its
// own: fetch sessions live in replica, producer ids in the controller,
// consumer groups and committed offsets in group (group_common.go holds the
// helpers of the group coordinator APIs). Fetch does not read large record
// sets at all (fetch_bulk.go): it answers with a server.BulkResponse that
// names where in its segment file each one lies, and the server reads them
// through a bounded buffer while it writes the response, so a fetch's memory
// does not grow with what it asks for.
//
// ApiVersions advertises exactly the keys registered here with their ranges;
// the server closes connections that use anything else.
//
// Errors from the domain are turned into Kafka codes by one table
// (errors.go): kerr values pass through, record/log sentinels map to their
// Kafka codes, anything else is UNKNOWN_SERVER_ERROR and logged.
package api
