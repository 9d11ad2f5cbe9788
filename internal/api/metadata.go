package api

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
	"github.com/gregor-broker/gregor/internal/topicpart"
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
//
// Authorization (KafkaApis.getTopicMetadata): a topic needs DESCRIBE; one
// named in the request without it is TOPIC_AUTHORIZATION_FAILED (by id:
// with a null name), and a listing of every topic leaves it out. Creating
// an unknown topic needs CREATE on the cluster or on the topic, else
// TOPIC_AUTHORIZATION_FAILED. The authorized-operations fields (v8+) carry
// what the principal may do when asked.
func init() { register(kmsg.Metadata.Int16(), 0, 13, handleMetadata) }

const authorizedOpsNotRequested = math.MinInt32

func handleMetadata(ctx context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	z := h.authz(r)
	im := h.d.Metadata.Image()
	resp.ClusterID = strp(im.ClusterID)
	resp.AuthorizedOperations = authorizedOpsNotRequested
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = 0
		if z.filter(auth.OpDescribe, auth.ResourceCluster, auth.ClusterName) {
			resp.AuthorizedOperations = z.operations(true, auth.ResourceCluster, auth.ClusterName)
		}
	}
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
		if ti == nil { // deleted since it was auto-created
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, t)
			return
		}
		t.TopicID = ti.ID
		t.IsInternal = topicpart.Internal(name)
		t.AuthorizedOperations = z.operations(req.IncludeTopicAuthorizedOperations, auth.ResourceTopic, name)
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
			if z.filter(auth.OpDescribe, auth.ResourceTopic, name) {
				add(name, [16]byte{}, nil)
			}
		}
	} else {
		for _, rt := range req.Topics {
			name, id, err := h.metadataTopic(ctx, z, im, req, rt)
			if err == nil && im.Topic(name) == nil {
				im = h.d.Metadata.Image() // it auto-created the topic
			}
			add(name, id, err)
		}
	}
	resp.Brokers, resp.ControllerID = h.liveBrokers(im, r.Conn.Listener)
	return resp, nil
}

// metadataTopic resolves one topic a Metadata request names, by name or
// by id, auto-creating it when allowed: the name to describe, or the error
// to answer it with.
func (h *Handler) metadataTopic(ctx context.Context, z authz, im *metadata.Image, req *kmsg.MetadataRequest,
	rt kmsg.MetadataRequestTopic) (string, [16]byte, error) {
	if rt.Topic == nil || *rt.Topic == "" {
		if rt.TopicID == [16]byte{} {
			return "", rt.TopicID, kerr.InvalidTopicException
		}
		t := im.TopicByID(metadata.TopicID(rt.TopicID))
		switch {
		case t == nil:
			return "", rt.TopicID, kerr.UnknownTopicID
		case !z.allowed(auth.OpDescribe, auth.ResourceTopic, t.Name):
			return "", t.ID, kerr.TopicAuthorizationFailed
		}
		return t.Name, t.ID, nil
	}
	name := *rt.Topic
	switch {
	case !z.allowed(auth.OpDescribe, auth.ResourceTopic, name):
		return name, [16]byte{}, kerr.TopicAuthorizationFailed
	case im.Topic(name) != nil:
		return name, [16]byte{}, nil
	case controller.ValidateTopicName(name) != nil:
		return name, [16]byte{}, kerr.InvalidTopicException
	}
	autoCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && h.d.EnsureTopic != nil &&
		h.d.Config().Bool("auto.create.topics.enable")
	if !autoCreate {
		return name, [16]byte{}, kerr.UnknownTopicOrPartition
	}
	if !z.filter(auth.OpCreate, auth.ResourceCluster, auth.ClusterName) && !z.allowed(auth.OpCreate, auth.ResourceTopic, name) {
		return name, [16]byte{}, kerr.TopicAuthorizationFailed
	}
	if err := h.d.EnsureTopic(ctx, name); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return name, [16]byte{}, err
	}
	// EnsureTopic returns once this broker has published the topic, so it
	// is answered in full at once.
	if h.d.Metadata.Image().Topic(name) == nil {
		return name, [16]byte{}, kerr.LeaderNotAvailable
	}
	return name, [16]byte{}, nil
}

// liveBrokers are the unfenced brokers with an endpoint on listener (""
// for the first client listener), and the controller id to give clients:
// the active controller if it is one of them, else a random one of them
// (-1 when there is none).
func (h *Handler) liveBrokers(im *metadata.Image, listener string) ([]kmsg.MetadataResponseBroker, int32) {
	var out []kmsg.MetadataResponseBroker
	ctrl := int32(-1)
	for _, b := range im.SortedBrokers() {
		ep, rack, ok := h.endpointOn(im, b.ID, listener)
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
