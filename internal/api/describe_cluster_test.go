package api_test

import (
	"math"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeCluster(t *testing.T) {
	a := newAdminAPI(t, map[string]string{"broker.rack": "rack-a"})
	_, portStr, _ := net.SplitHostPort(a.b.Addr().String())
	port, _ := strconv.Atoi(portStr)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		resp := a.send(req, a.pinned(kmsg.DescribeCluster, v)).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != a.b.Metadata().ClusterID || resp.ControllerID != 1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if len(resp.Brokers) != 1 {
			t.Fatalf("v%d brokers: %+v", v, resp.Brokers)
		}
		b := resp.Brokers[0]
		if b.NodeID != 1 || b.Host != "127.0.0.1" || b.Port != int32(port) || b.Rack == nil || *b.Rack != "rack-a" || b.IsFenced {
			t.Fatalf("v%d broker: %+v", v, b)
		}
		if resp.ClusterAuthorizedOperations != math.MinInt32 {
			t.Fatalf("v%d: authorized operations %d sent unasked", v, resp.ClusterAuthorizedOperations)
		}
	}

	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp := a.send(req).(*kmsg.DescribeClusterResponse)
	// DESCRIBE (8), ALTER (7), CLUSTER_ACTION (9), DESCRIBE_CONFIGS (10),
	// ALTER_CONFIGS (11) and IDEMPOTENT_WRITE (12) are cluster operations.
	for _, op := range []uint{7, 8, 9, 10, 11, 12} {
		if resp.ClusterAuthorizedOperations&(1<<op) == 0 {
			t.Errorf("cluster operation %d not authorized: %b", op, resp.ClusterAuthorizedOperations)
		}
	}

	// Only broker endpoints are served.
	req = kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	resp = a.send(req).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != kerr.MismatchedEndpointType.Code || len(resp.Brokers) != 0 {
		t.Fatalf("controller endpoints: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp)
	}
	req.EndpointType = 5
	resp = a.send(req).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != kerr.UnsupportedEndpointType.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Unsupported endpoint type 5" {
		t.Fatalf("unknown endpoint type: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}

	// kadm's broker listing agrees.
	bs, err := a.adm.ListBrokers(a.ctx)
	if err != nil || len(bs) != 1 || bs[0].NodeID != 1 || bs[0].Port != int32(port) {
		t.Fatalf("ListBrokers: %v %+v", err, bs)
	}
}
