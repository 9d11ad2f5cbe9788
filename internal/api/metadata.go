package api

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
)

// Metadata, versions 0-13 (Kafka 4.2). Answers from the metadata this
// broker has published: the unfenced brokers with their endpoint on the
// listener the request came in on, the cluster id, the controller, and each
// topic's partitions with their leader, leader epoch, replicas, ISR and
// offline replicas. A partition whose leader cannot serve (none elected, its
// only replica's broker fenced or gone, its log dir offline) has leader -1
// and LEADER_NOT_AVAILABLE. The controller id is the active controller when
// its broker is live (every Gregor node is both), else a random live
// broker, as a KRaft broker answers (KIP-590: admin requests sent to it are
// forwarded). A null topic list means every topic; v4+
// AllowAutoTopicCreation creates unknown topics with the broker defaults
// when auto.create.topics.enable is true (through the controller; the new
// topic is answered in full); v10+ topics may be named by id.
func init() { register(kmsg.Metadata.Int16(), 0, 13, handleMetadata) }

// authorizedOpsAll is every topic operation bit (READ..DESCRIBE_CONFIGS..);
// Gregor has no ACLs yet, so everything is allowed.
const (
	authorizedOpsNotRequested = math.MinInt32
	authorizedTopicOps        = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	authorizedClusterOps      = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
)

func handleMetadata(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	im := h.d.Metadata.Image()
	resp.ClusterID = strp(im.ClusterID)
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
		t.IsInternal = controller.IsInternalTopic(name)
		if req.IncludeTopicAuthorizedOperations {
			t.AuthorizedOperations = authorizedTopicOps
		}
		for p, pi := range ti.Partitions {
			v := h.viewPartition(im, name, int32(p), pi)
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.LeaderEpoch = int32(p), v.leader, v.leaderEpoch
			mp.Replicas, mp.ISR, mp.OfflineReplicas = v.replicas, v.isr, v.offline
			mp.ErrorCode = errCode(h.d.Logger, v.err)
			t.Partitions = append(t.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, t)
	}

	if req.Topics == nil {
		for _, name := range im.TopicNames() {
			add(name, [16]byte{}, nil)
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic == nil || *rt.Topic == "" {
				if rt.TopicID == [16]byte{} {
					add("", rt.TopicID, kerr.InvalidTopicException)
					continue
				}
				t := im.TopicByID(metadata.TopicID(rt.TopicID))
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
			if err := h.d.EnsureTopic(ctx, name); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				add(name, [16]byte{}, err)
				continue
			}
			// EnsureTopic returns once this broker has published the
			// topic, so it is answered in full at once.
			im = h.d.Metadata.Image()
			if im.Topic(name) == nil {
				add(name, [16]byte{}, kerr.LeaderNotAvailable)
				continue
			}
			add(name, [16]byte{}, nil)
		}
	}
	resp.Brokers, resp.ControllerID = h.liveBrokers(im)
	return resp, nil
}

// liveBrokers are the unfenced brokers with an endpoint on this listener,
// and the controller id to give clients: the active controller if it is
// one of them, else a random one of them (-1 when there is none).
func (h *Handler) liveBrokers(im *metadata.Image) ([]kmsg.MetadataResponseBroker, int32) {
	var out []kmsg.MetadataResponseBroker
	ctrl := int32(-1)
	for _, b := range im.SortedBrokers() {
		ep, rack, ok := h.endpoint(im, b.ID)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = b.ID, ep.Host, ep.Port, rack
		out = append(out, mb)
		if b.ID == im.Controller.Node {
			ctrl = b.ID
		}
	}
	if ctrl < 0 && len(out) > 0 {
		ctrl = out[rand.IntN(len(out))].NodeID
	}
	return out, ctrl
}
