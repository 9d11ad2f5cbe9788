package api

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/metadata"
	"github.com/gregor-broker/gregor/internal/server"
)

// Authorization of the requests the controller answers. Kafka's brokers
// forward them in an envelope that carries the client's principal and the
// controller authorizes (ControllerApis); Gregor forwards a request as it
// came, so the broker that received it authorizes it first, with the same
// rules and answers: items the principal may not touch are taken out of
// the forwarded request and answered here, and what the controller answers
// for the rest is shown only as far as the principal may see it. The
// CONTROLLER listener admits nodes only (by their connection's principal,
// see package broker), not the client behind a forwarded request.

// clusterForwarded is the operation on the cluster a forwarded request
// needs whole (CLUSTER_AUTHORIZATION_FAILED for every item otherwise).
var clusterForwarded = map[int16]auth.Operation{
	kmsg.ElectLeaders.Int16():               auth.OpAlter,
	kmsg.AlterPartitionAssignments.Int16():  auth.OpAlter,
	kmsg.ListPartitionReassignments.Int16(): auth.OpDescribe,
	kmsg.DescribeQuorum.Int16():             auth.OpDescribe,
	kmsg.CreateACLs.Int16():                 auth.OpAlter,
	kmsg.DeleteACLs.Int16():                 auth.OpAlter,
	kmsg.AlterUserSCRAMCredentials.Int16():  auth.OpAlter,
	kmsg.UpdateFeatures.Int16():             auth.OpAlter,
}

// authorizeForward returns the request to forward (nil when nothing is
// left to forward) and finish, which completes the controller's answer (an
// empty response of the request's version when nothing was forwarded) with
// the answers decided here. A request refused whole is answered by
// refused.
func (h *Handler) authorizeForward(r *server.Request) (fwd kmsg.Request, finish func(kmsg.Response) kmsg.Response, refused kmsg.Response) {
	same := func(resp kmsg.Response) kmsg.Response { return resp }
	z := h.authz(r)
	if !z.enabled() {
		return r.Body, same, nil
	}
	if op, ok := clusterForwarded[r.Key]; ok {
		if !z.cluster(op) {
			return nil, nil, failForwarded(r.Body, kerr.ClusterAuthorizationFailed.Code, strp(kerr.ClusterAuthorizationFailed.Description))
		}
		return r.Body, same, nil
	}
	switch req := r.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		fwd, finish = authorizeCreateTopics(z, req)
	case *kmsg.CreatePartitionsRequest:
		fwd, finish = authorizeCreatePartitions(z, req)
	case *kmsg.DeleteTopicsRequest:
		if !h.d.Config().Bool("delete.topic.enable") {
			return r.Body, same, nil // the controller refuses every topic
		}
		fwd, finish = authorizeDeleteTopics(z, h.d.Metadata.Image(), req)
	default:
		return r.Body, same, nil
	}
	return fwd, finish, nil
}

// counts counts the names a request gives: a name given twice is left for
// the controller to refuse as a duplicate.
func counts(names func(yield func(string) bool)) map[string]int {
	n := map[string]int{}
	for s := range names {
		n[s]++
	}
	return n
}

// authorizeCreateTopics is Kafka's: CREATE on the cluster, or on each topic
// (TOPIC_AUTHORIZATION_FAILED, "Authorization failed."); a created topic's
// configs are shown only with DESCRIBE_CONFIGS on it.
func authorizeCreateTopics(z authz, req *kmsg.CreateTopicsRequest) (kmsg.Request, func(kmsg.Response) kmsg.Response) {
	count := counts(func(yield func(string) bool) {
		for _, t := range req.Topics {
			if !yield(t.Topic) {
				return
			}
		}
	})
	clusterCreate := z.filter(auth.OpCreate, auth.ResourceCluster, auth.ClusterName)
	fwd := *req
	fwd.Topics = nil
	var denied []kmsg.CreateTopicsResponseTopic
	for _, t := range req.Topics {
		if count[t.Topic] == 1 && t.Topic != controller.ClusterMetadataTopic && !clusterCreate &&
			!z.allowed(auth.OpCreate, auth.ResourceTopic, t.Topic) {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.ErrorMessage = t.Topic, kerr.TopicAuthorizationFailed.Code, strp("Authorization failed.")
			denied = append(denied, st)
			continue
		}
		fwd.Topics = append(fwd.Topics, t)
	}
	finish := func(kr kmsg.Response) kmsg.Response {
		resp := kr.(*kmsg.CreateTopicsResponse)
		for i := range resp.Topics {
			st := &resp.Topics[i]
			if st.ErrorCode == 0 && !z.filter(auth.OpDescribeConfigs, auth.ResourceTopic, st.Topic) {
				st.Configs, st.ConfigErrorCode = nil, kerr.TopicAuthorizationFailed.Code
			}
		}
		resp.Topics = append(resp.Topics, denied...)
		return resp
	}
	if len(fwd.Topics) == 0 {
		return nil, finish
	}
	return &fwd, finish
}

// authorizeCreatePartitions is Kafka's: ALTER on each topic
// (TOPIC_AUTHORIZATION_FAILED).
func authorizeCreatePartitions(z authz, req *kmsg.CreatePartitionsRequest) (kmsg.Request, func(kmsg.Response) kmsg.Response) {
	count := counts(func(yield func(string) bool) {
		for _, t := range req.Topics {
			if !yield(t.Topic) {
				return
			}
		}
	})
	fwd := *req
	fwd.Topics = nil
	var denied []kmsg.CreatePartitionsResponseTopic
	for _, t := range req.Topics {
		if count[t.Topic] == 1 && !z.allowed(auth.OpAlter, auth.ResourceTopic, t.Topic) {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			st.ErrorMessage = strp(kerr.TopicAuthorizationFailed.Description)
			denied = append(denied, st)
			continue
		}
		fwd.Topics = append(fwd.Topics, t)
	}
	finish := func(kr kmsg.Response) kmsg.Response {
		resp := kr.(*kmsg.CreatePartitionsResponse)
		resp.Topics = append(resp.Topics, denied...)
		return resp
	}
	if len(fwd.Topics) == 0 {
		return nil, finish
	}
	return &fwd, finish
}

// authorizeDeleteTopics is Kafka's: a topic named by id needs DESCRIBE
// (else TOPIC_AUTHORIZATION_FAILED without its name) and DELETE
// (TOPIC_AUTHORIZATION_FAILED with its name); a topic named by name needs
// DELETE, and one the principal may describe but not delete that does not
// exist is UNKNOWN_TOPIC_OR_PARTITION, as the controller would answer.
// Ids are resolved against this broker's image; an id it does not know is
// left for the controller to answer.
func authorizeDeleteTopics(z authz, im *metadata.Image, req *kmsg.DeleteTopicsRequest) (kmsg.Request, func(kmsg.Response) kmsg.Response) {
	topics := deleteTopicsRequest(req)
	count := counts(func(yield func(string) bool) {
		for _, t := range topics {
			if t.Topic != nil && !yield(*t.Topic) {
				return
			}
		}
	})
	var denied []kmsg.DeleteTopicsResponseTopic
	deny := func(name *string, id [16]byte, e *kerr.Error) {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID, st.ErrorCode, st.ErrorMessage = name, id, e.Code, strp(e.Description)
		denied = append(denied, st)
	}
	var kept []kmsg.DeleteTopicsRequestTopic
	for _, t := range topics {
		switch {
		case t.Topic == nil && t.TopicID != [16]byte{}:
			mt := im.TopicByID(metadata.TopicID(t.TopicID))
			switch {
			case mt == nil:
			case !z.allowed(auth.OpDescribe, auth.ResourceTopic, mt.Name):
				deny(nil, t.TopicID, kerr.TopicAuthorizationFailed)
				continue
			case !z.allowed(auth.OpDelete, auth.ResourceTopic, mt.Name):
				deny(strp(mt.Name), t.TopicID, kerr.TopicAuthorizationFailed)
				continue
			}
		case t.Topic != nil && t.TopicID == [16]byte{} && count[*t.Topic] == 1:
			if !z.allowed(auth.OpDelete, auth.ResourceTopic, *t.Topic) {
				if im.Topic(*t.Topic) == nil && z.filter(auth.OpDescribe, auth.ResourceTopic, *t.Topic) {
					deny(t.Topic, [16]byte{}, kerr.UnknownTopicOrPartition)
				} else {
					deny(t.Topic, [16]byte{}, kerr.TopicAuthorizationFailed)
				}
				continue
			}
		}
		kept = append(kept, t)
	}
	fwd := *req
	if req.Version >= 6 {
		fwd.Topics = kept
	} else {
		fwd.TopicNames = nil
		for _, t := range kept {
			fwd.TopicNames = append(fwd.TopicNames, *t.Topic)
		}
	}
	finish := func(kr kmsg.Response) kmsg.Response {
		resp := kr.(*kmsg.DeleteTopicsResponse)
		resp.Topics = append(resp.Topics, denied...)
		return resp
	}
	if len(kept) == 0 {
		return nil, finish
	}
	return &fwd, finish
}
