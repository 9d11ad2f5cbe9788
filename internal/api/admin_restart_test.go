package api_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Topics, their ids and overrides, and both layers of dynamic broker configs
// survive a clean restart.
func TestAdminStateSurvivesRestart(t *testing.T) {
	a := newAdminAPI(t, nil)
	orders := a.create("orders", 4, map[string]*string{"retention.ms": ptrTo("60000")})
	if _, err := a.adm.UpdatePartitions(a.ctx, 6, "orders"); err != nil {
		t.Fatal(err)
	}
	a.create("gone", 1, nil)
	if _, err := a.adm.DeleteTopics(a.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.adm.AlterTopicConfigs(a.ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: ptrTo("4096")}}, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.adm.AlterBrokerConfigs(a.ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: ptrTo("7200000")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.adm.AlterBrokerConfigs(a.ctx, []kadm.AlterConfig{{Name: "log.segment.bytes", Value: ptrTo("2097152")}}, 1); err != nil {
		t.Fatal(err)
	}
	clusterID := a.b.Metadata().ClusterID

	a.restart()

	md, err := a.adm.Metadata(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics) != 1 || md.Cluster != clusterID {
		t.Fatalf("after restart: cluster %q topics %v", md.Cluster, md.Topics.Names())
	}
	td := md.Topics["orders"]
	if td.ID != orders.ID || len(td.Partitions) != 6 {
		t.Fatalf("orders after restart: id %v partitions %d", td.ID, len(td.Partitions))
	}
	if c := a.topicConfig("orders", "retention.ms"); c.MaybeValue() != "60000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after restart: %+v", c)
	}
	if c := a.topicConfig("orders", "max.message.bytes"); c.MaybeValue() != "4096" {
		t.Fatalf("max.message.bytes after restart: %+v", c)
	}
	if c, _ := a.brokerConfig("1", "log.retention.ms"); c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("log.retention.ms after restart: %+v", c)
	}
	if c, _ := a.brokerConfig("1", "log.segment.bytes"); c.MaybeValue() != "2097152" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("log.segment.bytes after restart: %+v", c)
	}
	if cfg := a.log("orders", 5).Config(); cfg.SegmentBytes != 2097152 || cfg.MaxMessageBytes != 4096 || cfg.RetentionMs != 60000 {
		t.Fatalf("log config after restart: %+v", cfg)
	}
}

// ApiVersions advertises the admin APIs at Kafka 4.2's maximum versions and
// Kafka 4.0's minimums (KIP-896).
func TestAdminAPIVersions(t *testing.T) {
	a := newAdminAPI(t, nil)
	resp := a.send(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	mins := map[kmsg.Key]int16{
		kmsg.CreateTopics: 2, kmsg.DeleteTopics: 1, kmsg.CreatePartitions: 0, kmsg.DescribeConfigs: 1,
		kmsg.AlterConfigs: 0, kmsg.IncrementalAlterConfigs: 0, kmsg.DescribeLogDirs: 1, kmsg.DescribeCluster: 0,
		kmsg.DescribeTopicPartitions: 0,
	}
	v42 := kversion.V4_2_0()
	for key, min := range mins {
		max, ok := v42.LookupMaxKeyVersion(int16(key))
		if !ok {
			t.Fatalf("%s not in Kafka 4.2", key.Name())
		}
		if got[int16(key)] != [2]int16{min, max} {
			t.Errorf("%s: advertised %v, want [%d %d]", key.Name(), got[int16(key)], min, max)
		}
	}
}
