package api

import (
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/group"
	"github.com/gregor-broker/gregor/internal/server"
)

// Helpers shared by the group coordinator APIs (FindCoordinator, JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
// DescribeGroups, DeleteGroups, OffsetDelete).

// groups returns the group coordinator, or COORDINATOR_NOT_AVAILABLE when the
// broker runs without one.
func (h *Handler) groups() (*group.Coordinator, error) {
	if h.d.Groups == nil {
		return nil, fmt.Errorf("%w: this broker has no group coordinator", kerr.CoordinatorNotAvailable)
	}
	return h.d.Groups, nil
}

// errEmptyGroupID is Kafka's answer to a group request without a group id.
var errEmptyGroupID = fmt.Errorf("%w: the group id is empty", kerr.InvalidGroupID)

// clientInfo is the client id and client host a group member is described
// with; Kafka shows the host as InetAddress.toString, "/1.2.3.4".
func clientInfo(r *server.Request) (clientID, host string) {
	if r.ClientID != nil {
		clientID = *r.ClientID
	}
	if r.Conn.Remote != nil {
		host = r.Conn.Remote.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = "/" + host
	}
	return clientID, host
}
