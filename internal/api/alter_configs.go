package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// AlterConfigs, versions 0-2 (Kafka 4.2).
//
// Replaces the whole set of dynamic configs of each resource: a topic's
// overrides, the cluster-wide broker defaults (BROKER "") or this node's own
// dynamic broker configs (BROKER with this node's id). As in Kafka: a
// resource named twice fails both entries, a config named twice or given a
// null value fails the resource, all with INVALID_REQUEST. Topic configs are
// validated like CreateTopics configs (INVALID_CONFIG) before the topic's
// existence is checked (UNKNOWN_TOPIC_OR_PARTITION). Broker configs that
// cannot be applied — read-only ones, per-broker ones at the cluster level,
// bad values — are INVALID_REQUEST, as Kafka's broker answers them
// (KAFKA-13609). Another broker id is INVALID_REQUEST. ValidateOnly checks
// and changes nothing. Changes take effect before the response is sent: the
// logs of affected topics are reconfigured at once.
//
// Deviations: CLIENT_METRICS and GROUP resources are refused with
// INVALID_REQUEST; Gregor has neither (BROKER_LOGGER is refused by Kafka too).
func init() { register(kmsg.AlterConfigs.Int16(), 0, 2, handleAlterConfigs) }

func handleAlterConfigs(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[configResourceName]int{}
	for _, rr := range req.Resources {
		seen[configResourceName{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		var err error
		if seen[configResourceName{rr.ResourceType, rr.ResourceName}] > 1 {
			err = fmt.Errorf("%w: Each resource must appear at most once.", kerr.InvalidRequest)
		} else {
			err = h.alterConfigs(rr, req.ValidateOnly)
		}
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode = errCode(h.d.Logger, err)
		sr.ErrorMessage = kafkaMessage(err)
		if err != nil {
			h.d.Logger.Debug("alter configs refused", "type", rr.ResourceType, "name", rr.ResourceName, "err", err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (h *Handler) alterConfigs(rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, len(rr.Configs))
	var nulls []string
	configs := make(map[string]string, len(rr.Configs))
	for i, c := range rr.Configs {
		names[i] = c.Name
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if duplicateConfigNames(names) {
		return fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, strings.Join(nulls, ", "))
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeBroker:
		perNode, err := h.brokerResource(rr.ResourceName)
		if err != nil {
			return err
		}
		return h.d.Controller.UpdateBrokerConfigs(perNode, func(map[string]string) (map[string]string, error) {
			return configs, h.brokerLayerCheck(perNode, configs)
		}, validateOnly)
	case kmsg.ConfigResourceTypeTopic:
		if err := checkConfigTopicName(rr.ResourceName); err != nil {
			return err
		}
		return h.d.Controller.UpdateTopicConfigs(rr.ResourceName, func(map[string]string) (map[string]string, error) {
			return configs, nil
		}, validateOnly)
	case kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig:
		return errUnsupportedResource(rr.ResourceType)
	}
	return fmt.Errorf("%w: Unknown resource type %d", kerr.InvalidRequest, int8(rr.ResourceType))
}
