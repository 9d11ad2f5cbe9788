package api

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeConfigs, versions 1-4 (Kafka 4.2; v0 was removed in Kafka 4.0).
//
// TOPIC resources describe every topic config with its effective value and
// source (DYNAMIC_TOPIC_CONFIG for an override, else the broker layer that
// supplies the default, else DEFAULT_CONFIG), following Kafka's ConfigHelper
// including its synonym quirks (see package config). An invalid topic name is
// INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
// BROKER resources: this node's id describes every broker config; "" the
// cluster-wide dynamic defaults only; another id is INVALID_REQUEST. A null
// or empty ConfigNames list asks for every config. Synonyms are sent when
// IncludeSynonyms is set and documentation (v3+) when IncludeDocumentation is
// set. Sensitive values are null. A resource type Kafka does not know fails
// every resource of the request with INVALID_REQUEST, as in Kafka.
//
// Deviations: BROKER_LOGGER, CLIENT_METRICS and GROUP resources are answered
// with INVALID_REQUEST (after Kafka's own name checks): Gregor has no log4j
// loggers, client metrics subscriptions or group configs. Documentation is
// Gregor's own one-line text per config, not Kafka's.
func init() { register(kmsg.DescribeConfigs.Int16(), 1, 4, handleDescribeConfigs) }

func handleDescribeConfigs(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		if !knownResourceType(rr.ResourceType) {
			return describeConfigsError(req, resp), nil
		}
	}
	z := h.authz(r)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := configAuthorization(z, auth.OpDescribeConfigs, rr.ResourceType, rr.ResourceName)
		var entries []config.Entry
		if err == nil {
			entries, err = h.describeResource(rr)
		}
		if err != nil {
			sr.ErrorCode = errCode(h.d.Logger, err)
			sr.ErrorMessage = kafkaMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		for _, e := range filterEntries(entries, rr.ConfigNames) {
			sr.Configs = append(sr.Configs, describedConfig(e, req.IncludeSynonyms, req.IncludeDocumentation))
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// describeConfigsError is Kafka's whole-request error answer.
func describeConfigsError(req *kmsg.DescribeConfigsRequest, resp *kmsg.DescribeConfigsResponse) *kmsg.DescribeConfigsResponse {
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode = kerr.InvalidRequest.Code
		sr.ErrorMessage = strp(kerr.InvalidRequest.Description)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (h *Handler) describeResource(rr kmsg.DescribeConfigsRequestResource) ([]config.Entry, error) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := controller.ValidateTopicName(rr.ResourceName); err != nil {
			return nil, err
		}
		im := h.d.Metadata.Image()
		if im.Topic(rr.ResourceName) == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		return config.DescribeTopic(h.d.Config(), im.TopicConfigs(rr.ResourceName)), nil
	case kmsg.ConfigResourceTypeBroker:
		if rr.ResourceName == "" {
			return config.DescribeBrokerDefaults(h.d.Config()), nil
		}
		id, err := parseBrokerID(rr.ResourceName)
		if err != nil {
			return nil, err
		}
		if id != h.d.NodeID {
			return nil, fmt.Errorf("%w: Unexpected broker id, expected %d or empty string, but received %s",
				kerr.InvalidRequest, h.d.NodeID, rr.ResourceName)
		}
		return config.DescribeBroker(h.d.Config()), nil
	case kmsg.ConfigResourceTypeBrokerLogger:
		if rr.ResourceName == "" {
			return nil, fmt.Errorf("%w: Broker id must not be empty", kerr.InvalidRequest)
		}
		id, err := parseBrokerID(rr.ResourceName)
		if err != nil {
			return nil, err
		}
		if id != h.d.NodeID {
			return nil, fmt.Errorf("%w: Unexpected broker id, expected %d but received %s", kerr.InvalidRequest, h.d.NodeID, rr.ResourceName)
		}
	case kmsg.ConfigResourceTypeClientMetrics:
		if rr.ResourceName == "" {
			return nil, fmt.Errorf("%w: Client metrics subscription name must not be empty", kerr.InvalidRequest)
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if rr.ResourceName == "" {
			return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
		}
	}
	return nil, errUnsupportedResource(rr.ResourceType)
}

// parseBrokerID reads a broker resource name as Kafka's ConfigHelper does.
func parseBrokerID(name string) (int32, error) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: Broker id must be an integer, but it is: %s", kerr.InvalidRequest, name)
	}
	return int32(id), nil
}

// filterEntries keeps the named configs; no names means all of them.
func filterEntries(entries []config.Entry, names []string) []config.Entry {
	if len(names) == 0 {
		return entries
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []config.Entry
	for _, e := range entries {
		if want[e.Name] {
			out = append(out, e)
		}
	}
	return out
}

func describedConfig(e config.Entry, synonyms, doc bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	c.Value = e.Value
	c.ReadOnly = e.ReadOnly
	c.IsDefault = e.Source == config.SourceDefault
	c.Source = kmsg.ConfigSource(e.Source)
	c.IsSensitive = e.Sensitive
	c.ConfigType = kmsg.ConfigType(e.Type)
	if synonyms {
		for _, s := range e.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	if doc && e.Doc != "" {
		c.Documentation = strp(e.Doc)
	}
	return c
}
