package api

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/server"
)

// IncrementalAlterConfigs, versions 0-1 (Kafka 4.2).
//
// Applies SET, DELETE, APPEND and SUBTRACT to the dynamic configs of each
// resource (a topic, the cluster-wide broker defaults "" or this node's id),
// atomically per resource: if one operation fails nothing of that resource
// changes. As in Kafka: a resource named twice fails both entries, a config
// named twice or a null value for anything but DELETE fails the resource,
// all with INVALID_REQUEST. APPEND and SUBTRACT work on LIST configs only
// (INVALID_CONFIG otherwise); on a list that is not set they start from the
// config's default. Topic results are validated like CreateTopics configs
// (INVALID_CONFIG) before the topic's existence is checked
// (UNKNOWN_TOPIC_OR_PARTITION). Broker configs that cannot be applied are
// INVALID_REQUEST, as Kafka's broker answers them. ValidateOnly checks and
// changes nothing. Changes take effect before the response is sent.
//
// Deviations: BROKER_LOGGER (log4j levels), CLIENT_METRICS and GROUP
// resources are refused with INVALID_REQUEST; Gregor has none of them. An
// unknown operation on a topic config is INVALID_REQUEST (Kafka's controller
// fails it with UNKNOWN_SERVER_ERROR).
func init() {
	register(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handleIncrementalAlterConfigs)
}

func handleIncrementalAlterConfigs(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[configResourceName]int{}
	for _, rr := range req.Resources {
		seen[configResourceName{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		var err error
		if seen[configResourceName{rr.ResourceType, rr.ResourceName}] > 1 {
			err = fmt.Errorf("%w: Each resource must appear at most once.", kerr.InvalidRequest)
		} else {
			err = h.incrementalAlterConfigs(rr, req.ValidateOnly)
		}
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode = errCode(h.d.Logger, err)
		sr.ErrorMessage = kafkaMessage(err)
		if err != nil {
			h.d.Logger.Debug("incremental alter configs refused", "type", rr.ResourceType, "name", rr.ResourceName, "err", err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (h *Handler) incrementalAlterConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, len(rr.Configs))
	ops := make([]config.AlterEntry, len(rr.Configs))
	var nulls []string
	for i, c := range rr.Configs {
		names[i] = c.Name
		ops[i] = config.AlterEntry{Name: c.Name, Op: config.AlterOp(c.Op), Value: c.Value}
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
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
		if err := checkBrokerOps(ops); err != nil {
			return err
		}
		return h.d.Controller.UpdateBrokerConfigs(perNode, func(current map[string]string) (map[string]string, error) {
			next, err := config.ApplyIncremental(current, ops, false)
			if err != nil {
				return nil, withCode(kerr.InvalidRequest, err)
			}
			return next, h.brokerLayerCheck(perNode, next)
		}, validateOnly)
	case kmsg.ConfigResourceTypeTopic:
		if err := checkConfigTopicName(rr.ResourceName); err != nil {
			return err
		}
		return h.d.Controller.UpdateTopicConfigs(rr.ResourceName, func(current map[string]string) (map[string]string, error) {
			return config.ApplyIncremental(current, ops, true)
		}, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig:
		return errUnsupportedResource(rr.ResourceType)
	}
	return fmt.Errorf("%w: Unknown resource type %d", kerr.InvalidRequest, int8(rr.ResourceType))
}

// checkBrokerOps makes the checks Kafka's broker makes on operations on its
// own configs before validating the result (ConfigAdminManager).
func checkBrokerOps(ops []config.AlterEntry) error {
	for _, op := range ops {
		switch op.Op {
		case config.AlterSet, config.AlterDelete:
		case config.AlterAppend, config.AlterSubtract:
			d, ok := config.BrokerDef(op.Name)
			if !ok {
				return fmt.Errorf("%w: Unknown config name: %s", kerr.InvalidConfig, op.Name)
			}
			if d.Type != config.List {
				verb := "append"
				if op.Op == config.AlterSubtract {
					verb = "subtract"
				}
				return fmt.Errorf("%w: Config value %s is not allowed for config key: %s", kerr.InvalidConfig, verb, op.Name)
			}
		default:
			return fmt.Errorf("%w: Unknown operations type %d", kerr.InvalidRequest, int8(op.Op))
		}
	}
	return nil
}
