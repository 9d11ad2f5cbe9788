package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
)

// Helpers shared by the APIs that create, delete and configure topics and
// brokers (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs).

// kafkaMessage is the error message Kafka would put beside err's code: the
// text a Kafka error was wrapped with (without the code and its generic
// description), the text of a domain error the error table knows, or nil for
// a bare Kafka error and for errors answered as UNKNOWN_SERVER_ERROR, whose
// details stay in the broker's log as Kafka keeps them out of responses.
func kafkaMessage(err error) *string {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if err == ke {
			return nil
		}
		s := strings.TrimPrefix(err.Error(), ke.Error()+": ")
		return &s
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			s := err.Error()
			return &s
		}
	}
	return nil
}

// withCode makes err answer as code, keeping its text as the message.
func withCode(code *kerr.Error, err error) error {
	msg := err.Error()
	if m := kafkaMessage(err); m != nil {
		msg = *m
	}
	return fmt.Errorf("%w: %s", code, msg)
}

// configResourceName is how a config resource is told apart in duplicate checks.
type configResourceName struct {
	typ  kmsg.ConfigResourceType
	name string
}

// knownResourceType reports whether Kafka 4.2 knows the config resource type.
func knownResourceType(t kmsg.ConfigResourceType) bool {
	switch t {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger,
		kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig:
		return true
	}
	return false
}

// errUnsupportedResource answers the config resource types Kafka has and
// Gregor does not: broker loggers (log4j levels), client metrics
// subscriptions and group configs.
func errUnsupportedResource(t kmsg.ConfigResourceType) error {
	return fmt.Errorf("%w: Gregor does not support %s config resources", kerr.InvalidRequest, t)
}

// checkConfigTopicName applies the checks Kafka's controller makes on the
// name of a TOPIC config resource before anything else.
func checkConfigTopicName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: Default topic resources are not allowed.", kerr.InvalidRequest)
	}
	return controller.ValidateTopicName(name)
}

// checkConfigResource makes the controller's checks of a resource to alter
// before its configs: the resource types Gregor has (BROKER_LOGGER is
// refused as unsupported by IncrementalAlterConfigs, and as unknown by the
// legacy AlterConfigs, as Kafka answers), and a topic resource's name.
func checkConfigResource(t kmsg.ConfigResourceType, name string, incremental bool) error {
	switch t {
	case kmsg.ConfigResourceTypeBroker:
		return nil
	case kmsg.ConfigResourceTypeTopic:
		return checkConfigTopicName(name)
	case kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig:
		return errUnsupportedResource(t)
	case kmsg.ConfigResourceTypeBrokerLogger:
		if incremental {
			return errUnsupportedResource(t)
		}
	}
	return fmt.Errorf("%w: Unknown resource type %d", kerr.InvalidRequest, int8(t))
}

// brokerResource checks the name of a BROKER resource being altered: "" is
// the cluster default, otherwise it must be this node's id (Kafka's
// ConfigAdminManager.validateResourceNameIsCurrentNodeId). perNode tells
// which layer the resource is.
func (h *Handler) brokerResource(name string) (perNode bool, err error) {
	if name == "" {
		return false, nil
	}
	id, perr := strconv.ParseInt(name, 10, 32)
	if perr != nil {
		return false, fmt.Errorf("%w: Node id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	}
	if int32(id) != h.d.NodeID {
		return false, fmt.Errorf("%w: Unexpected broker id, expected %d, but received %s", kerr.InvalidRequest, h.d.NodeID, name)
	}
	return true, nil
}

// duplicateConfigNames finds config names given more than once in one resource.
func duplicateConfigNames(names []string) bool {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// brokerLayerCheck validates a new dynamic broker layer against the current
// configuration. Kafka's broker answers a broker config it cannot apply with
// INVALID_REQUEST, not INVALID_CONFIG (KAFKA-13609 keeps it so for
// compatibility), with the validator's message.
func (h *Handler) brokerLayerCheck(perNode bool, layer map[string]string) error {
	cur := h.d.Config()
	var next *config.Broker
	var err error
	if perNode {
		next, err = cur.WithDynamicPerBroker(layer)
	} else {
		next, err = cur.WithDynamic(layer)
	}
	if err == nil && h.d.CheckBrokerConfig != nil {
		err = h.d.CheckBrokerConfig(next)
	}
	if err != nil {
		return withCode(kerr.InvalidRequest, err)
	}
	return nil
}

// configAuthorization is Kafka's check of one config resource: op
// (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the cluster for broker, broker
// logger and client metrics resources (CLUSTER_AUTHORIZATION_FAILED), on the
// topic for a topic (TOPIC_AUTHORIZATION_FAILED), on the group for a group
// (GROUP_AUTHORIZATION_FAILED), with the error's default message.
func configAuthorization(z authz, op auth.Operation, t kmsg.ConfigResourceType, name string) error {
	var ok bool
	var denied *kerr.Error
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		ok, denied = z.allowed(op, auth.ResourceTopic, name), kerr.TopicAuthorizationFailed
	case kmsg.ConfigResourceTypeGroupConfig:
		ok, denied = z.allowed(op, auth.ResourceGroup, name), kerr.GroupAuthorizationFailed
	default:
		ok, denied = z.cluster(op), kerr.ClusterAuthorizationFailed
	}
	if ok {
		return nil
	}
	return fmt.Errorf("%w: %s", denied, denied.Description)
}
