package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gregor-broker/gregor/internal/config"
	"github.com/gregor-broker/gregor/internal/controller"
	"github.com/gregor-broker/gregor/internal/group"
)

// internalTopic is a topic the broker creates by itself on first use, as
// its broker configs describe it.
type internalTopic struct {
	req     controller.CreateTopicRequest
	from    []string // the broker configs req is derived from
	without string   // what cannot work without it
}

func internalTopics(b *config.Broker) []internalTopic {
	return []internalTopic{
		{group.OffsetsTopicRequest(b),
			[]string{"offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes", "min.insync.replicas"},
			"no consumer group could ever join, commit or fetch offsets"},
		{transactionStateTopicRequest(b),
			[]string{"transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
				"transaction.state.log.segment.bytes", "transaction.state.log.min.isr"},
			"no transactional producer could ever start"},
	}
}

// transactionStateTopicRequest is how Kafka's transaction coordinator
// creates __transaction_state (TransactionLog's topic configs). Gregor has
// no transaction coordinator yet; the request is checked at start so that a
// configuration that could never work is refused now, not when transactions
// arrive.
func transactionStateTopicRequest(b *config.Broker) controller.CreateTopicRequest {
	return controller.CreateTopicRequest{
		Name:              controller.TransactionStateTopic,
		NumPartitions:     b.Int("transaction.state.log.num.partitions"),
		ReplicationFactor: int16(b.Int("transaction.state.log.replication.factor")),
		Configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.Itoa(int(b.Int("transaction.state.log.min.isr"))),
			"segment.bytes":                  strconv.Itoa(int(b.Int("transaction.state.log.segment.bytes"))),
			"unclean.leader.election.enable": "false",
		},
		Internal: true,
	}
}

// checkInternalTopics refuses to start a broker whose configuration could
// never create, or never write to, an internal topic it has not created
// yet: Kafka would start and then answer every group (or transaction)
// request COORDINATOR_NOT_AVAILABLE, or NOT_ENOUGH_REPLICAS, for ever. An
// internal topic that exists keeps the configs it was created with, as in
// Kafka, so the broker configs that derive it no longer matter.
func checkInternalTopics(b *config.Broker, ctrl *controller.Controller) error {
	for _, it := range internalTopics(b) {
		if ctrl.Image().Topic(it.req.Name) != nil {
			continue
		}
		err := func() error {
			if _, err := ctrl.CreateTopic(it.req, true); err != nil {
				return err
			}
			tc, err := config.ResolveTopic(b, it.req.Configs)
			if err != nil {
				return err
			}
			if rf := int32(it.req.ReplicationFactor); tc.MinInsyncReplicas > rf {
				return fmt.Errorf("min.insync.replicas %d is above its replication factor %d, so no write to it could ever be acknowledged",
					tc.MinInsyncReplicas, rf)
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("%s could never be created and written with %s (%v); %s. Fix these settings and start again",
				it.req.Name, settings(b, it.from), err, it.without)
		}
	}
	return nil
}

// settings renders names with their effective values: "a=1, b=2".
func settings(b *config.Broker, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		v, _, _ := b.Value(n)
		out[i] = n + "=" + v
	}
	return strings.Join(out, ", ")
}
