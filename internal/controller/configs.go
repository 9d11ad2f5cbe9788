package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// incrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT to each
// resource's stored configs, atomically per resource, as Kafka's
// ConfigurationControlManager does.
func (c *Core) incrementalAlterConfigs(w *write, r *IncrementalAlterConfigsRequest) built {
	resp := &AlterConfigsResponse{Resources: make([]ResourceResult, len(r.Resources))}
	for i, rr := range r.Resources {
		resp.Resources[i] = ResourceResult{Type: rr.Type, Name: rr.Name,
			Err: c.alterResource(w, rr.Type, rr.Name, rr.Ops, r.ValidateOnly)}
	}
	return answer(resp, nil)
}

// alterConfigs is the legacy AlterConfigs: each resource's stored configs
// become exactly the given ones.
func (c *Core) alterConfigs(w *write, r *AlterConfigsRequest) built {
	resp := &AlterConfigsResponse{Resources: make([]ResourceResult, len(r.Resources))}
	for i, rr := range r.Resources {
		var ops []config.AlterEntry
		named := map[string]bool{}
		for _, cv := range rr.Configs {
			ops = append(ops, config.AlterEntry{Name: cv.Name, Op: config.AlterSet, Value: cv.Value})
			named[cv.Name] = true
		}
		for _, k := range slices.Sorted(maps.Keys(w.im.Configs(configResource(rr.Type, rr.Name)))) {
			if !named[k] {
				ops = append(ops, config.AlterEntry{Name: k, Op: config.AlterDelete})
			}
		}
		resp.Resources[i] = ResourceResult{Type: rr.Type, Name: rr.Name, Err: c.alterResource(w, rr.Type, rr.Name, ops, r.ValidateOnly)}
	}
	return answer(resp, nil)
}

func configResource(typ int8, name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: typ, Name: name}
}

// alterResource validates one resource's new configs and writes the Config
// records that differ. Topic configs are validated before the topic's
// existence is checked, as in Kafka. Changing min.insync.replicas with ELR
// on clears the ELR of the partitions it governs (KIP-966: the ELR was
// computed against the old value).
func (c *Core) alterResource(w *write, typ int8, name string, ops []config.AlterEntry, validateOnly bool) error {
	res := configResource(typ, name)
	current := w.im.Configs(res)
	var next map[string]string
	var err error
	switch typ {
	case metadata.ResourceTopic:
		if next, err = config.ApplyIncremental(current, ops, true); err != nil {
			return kafkaConfigError(err)
		}
		if _, err := config.ResolveTopic(c.brokerCfg, next); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
		if w.im.Topic(name) == nil {
			return fmt.Errorf("%w: The topic '%s' does not exist.", kerr.UnknownTopicOrPartition, name)
		}
	case metadata.ResourceBroker:
		if name != "" {
			if id, err := strconv.ParseInt(name, 10, 32); err != nil || id < 0 {
				return fmt.Errorf("%w: Unable to parse broker name as a base 10 number.", kerr.InvalidRequest)
			}
		}
		if next, err = config.ApplyIncremental(current, ops, false); err != nil {
			return kafkaConfigError(err)
		}
		if name == "" {
			if _, err := c.cfg.Broker.WithDynamic(next); err != nil {
				return kafkaConfigError(err)
			}
		}
	default:
		return fmt.Errorf("%w: Unknown resource type %d", kerr.InvalidRequest, typ)
	}
	if validateOnly {
		return nil
	}
	w.emit(configRecords(res, current, next)...)
	if elrEnabled(w.im) && namesConfig(ops, "min.insync.replicas") {
		w.clearELRs(typ, name)
	}
	return nil
}

// kafkaConfigError words a config package error as the Kafka error it is.
func kafkaConfigError(err error) error {
	if errors.Is(err, config.ErrInvalidRequest) {
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
}

// configRecords are the Config records that turn current into next.
func configRecords(res metadata.ConfigResource, current, next map[string]string) []metadata.Record {
	var recs []metadata.Record
	for _, k := range slices.Sorted(maps.Keys(next)) {
		if v, ok := current[k]; !ok || v != next[k] {
			v := next[k]
			recs = append(recs, metadata.Config{Resource: res, Name: k, Value: &v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(current)) {
		if _, ok := next[k]; !ok {
			recs = append(recs, metadata.Config{Resource: res, Name: k})
		}
	}
	return recs
}

func namesConfig(ops []config.AlterEntry, name string) bool {
	return slices.ContainsFunc(ops, func(op config.AlterEntry) bool { return op.Name == name })
}

// clearELRs empties the ELR and last known ELR of a topic's partitions, or
// of every partition for the cluster-wide broker config; a per-broker
// min.insync.replicas governs no partition's ELR.
func (w *write) clearELRs(typ int8, name string) {
	if typ == metadata.ResourceBroker && name != "" {
		return
	}
	var recs []metadata.Record
	for _, t := range w.im.SortedTopics() {
		if typ == metadata.ResourceTopic && t.Name != name {
			continue
		}
		for i, p := range t.Partitions {
			if len(p.ELR) == 0 && len(p.LastKnownELR) == 0 {
				continue
			}
			recs = append(recs, metadata.PartitionChange{Topic: t.ID, Partition: int32(i), ExpectedPartitionEpoch: p.PartitionEpoch,
				Leader: metadata.NoLeaderChange, ELR: []int32{}, LastKnownELR: []int32{}, LeaderRecoveryState: metadata.NoRecoveryChange})
		}
	}
	w.emit(recs...)
}
