package api

import (
	"context"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// Metadata, versions 0-13 (Kafka 4.2). A null topic list means every topic;
// v4+ AllowAutoTopicCreation creates unknown topics with the broker defaults
// when auto.create.topics.enable is true; v10+ topics may be named by id.
// This broker is the leader, only replica and whole ISR of every partition.
func init() { register(kmsg.Metadata.Int16(), 0, 13, handleMetadata) }

// authorizedOpsAll is every topic operation bit (READ..DESCRIBE_CONFIGS..);
// Gregor has no ACLs yet, so everything is allowed.
const (
	authorizedOpsNotRequested = math.MinInt32
	authorizedTopicOps        = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	authorizedClusterOps      = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
)

func handleMetadata(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := h.d.Advertised()
	im := h.d.Controller.Image()
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: h.d.NodeID, Host: host, Port: port}}
	resp.ClusterID = strp(im.ClusterID)
	resp.ControllerID = h.d.NodeID
	resp.AuthorizedOperations = authorizedOpsNotRequested
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = authorizedClusterOps
	}
	autoCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && h.d.EnsureTopic != nil &&
		h.d.Config().Bool("auto.create.topics.enable")

	add := func(name string, id [16]byte, err error) {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic, t.TopicID = strp(name), id
		t.AuthorizedOperations = authorizedOpsNotRequested
		if err != nil {
			t.ErrorCode = errCode(h.d.Logger, err)
			if name == "" {
				t.Topic = nil
			}
			resp.Topics = append(resp.Topics, t)
			return
		}
		ti := im.Topic(name)
		t.TopicID = ti.ID
		t.IsInternal = ti.Internal
		if req.IncludeTopicAuthorizedOperations {
			t.AuthorizedOperations = authorizedTopicOps
		}
		for p := int32(0); p < ti.Partitions; p++ {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition = p
			mp.Leader = h.d.NodeID
			mp.LeaderEpoch = 0
			mp.OfflineReplicas = []int32{}
			if part, err := h.partition(name, p); err == nil {
				mp.LeaderEpoch = part.LeaderEpoch()
			} else {
				mp.ErrorCode = kerr.LeaderNotAvailable.Code
				if errors.Is(err, kerr.KafkaStorageError) {
					// Its only replica is in an offline log dir: no leader.
					mp.Leader, mp.OfflineReplicas = -1, []int32{h.d.NodeID}
				}
			}
			mp.Replicas = []int32{h.d.NodeID}
			mp.ISR = []int32{h.d.NodeID}
			t.Partitions = append(t.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, t)
	}

	if req.Topics == nil {
		for _, name := range im.TopicNames() {
			add(name, [16]byte{}, nil)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		if rt.Topic == nil || *rt.Topic == "" {
			if rt.TopicID == [16]byte{} {
				add("", rt.TopicID, kerr.InvalidTopicException)
				continue
			}
			t := im.TopicByID(controller.TopicID(rt.TopicID))
			if t == nil {
				add("", rt.TopicID, kerr.UnknownTopicID)
				continue
			}
			add(t.Name, t.ID, nil)
			continue
		}
		name := *rt.Topic
		if im.Topic(name) != nil {
			add(name, [16]byte{}, nil)
			continue
		}
		if err := controller.ValidateTopicName(name); err != nil {
			add(name, [16]byte{}, kerr.InvalidTopicException)
			continue
		}
		if !autoCreate {
			add(name, [16]byte{}, kerr.UnknownTopicOrPartition)
			continue
		}
		if err := h.d.EnsureTopic(name); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			add(name, [16]byte{}, err)
			continue
		}
		// The single-node controller hosts the partitions before EnsureTopic
		// returns, so the new topic is answered in full at once.
		im = h.d.Controller.Image()
		add(name, [16]byte{}, nil)
	}
	return resp, nil
}
