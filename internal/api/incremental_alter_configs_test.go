package api_test

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// incrementalAlter sends one IncrementalAlterConfigs resource.
func (a *adminAPI) incrementalAlter(typ kmsg.ConfigResourceType, name string, validateOnly bool,
	ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	a.t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, ops
	req.Resources = append(req.Resources, rr)
	return a.send(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
}

func alterOp(name string, o kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, o, value
	return c
}

func TestIncrementalAlterMaxMessageBytesTakesEffect(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, nil)
	cl := a.b.Client(kgo.DefaultProduceTopic("t"), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	big := &kgo.Record{Value: bytes.Repeat([]byte("x"), 3000)}
	if err := cl.ProduceSync(a.ctx, big).FirstErr(); err != nil {
		t.Fatalf("3000-byte record before the change: %v", err)
	}

	rs, err := a.adm.AlterTopicConfigs(a.ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptrTo("1024")}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "set max.message.bytes", rs[0].Err, nil)
	if c := a.topicConfig("t", "max.message.bytes"); c.MaybeValue() != "1024" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("described after SET: %+v", c)
	}
	big = &kgo.Record{Value: bytes.Repeat([]byte("x"), 3000)}
	expectKerr(t, "3000-byte record after the change", cl.ProduceSync(a.ctx, big).FirstErr(), kerr.MessageTooLarge)
	if err := cl.ProduceSync(a.ctx, &kgo.Record{Value: []byte("small")}).FirstErr(); err != nil {
		t.Fatalf("small record: %v", err)
	}

	// DELETE restores the default.
	rs, err = a.adm.AlterTopicConfigs(a.ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "delete max.message.bytes", rs[0].Err, nil)
	if c := a.topicConfig("t", "max.message.bytes"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("described after DELETE: %+v", c)
	}
	big = &kgo.Record{Value: bytes.Repeat([]byte("x"), 3000)}
	if err := cl.ProduceSync(a.ctx, big).FirstErr(); err != nil {
		t.Fatalf("3000-byte record after DELETE: %v", err)
	}
}

func TestIncrementalAlterTopicOps(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, map[string]*string{"retention.ms": ptrTo("60000")})

	// APPEND to an unset list starts from its default.
	r := a.incrementalAlter(kmsg.ConfigResourceTypeTopic, "t", false,
		alterOp("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, ptrTo("compact")),
		alterOp("retention.ms", kmsg.IncrementalAlterConfigOpSet, ptrTo("86400000")))
	checkAlter(t, "append + set", r.ErrorCode, r.ErrorMessage, nil, "")
	if got := a.b.Metadata().TopicConfigs("t"); got["cleanup.policy"] != "delete,compact" || got["retention.ms"] != "86400000" {
		t.Fatalf("overrides after APPEND: %v", got)
	}
	if cfg := a.log("t", 0).Config(); !cfg.Compact || !cfg.Delete || cfg.RetentionMs != 86400000 {
		t.Fatalf("log config after APPEND: %+v", cfg)
	}
	r = a.incrementalAlter(kmsg.ConfigResourceTypeTopic, "t", false, alterOp("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, ptrTo("delete")))
	checkAlter(t, "subtract", r.ErrorCode, r.ErrorMessage, nil, "")
	if c := a.topicConfig("t", "cleanup.policy"); c.MaybeValue() != "compact" {
		t.Fatalf("cleanup.policy after SUBTRACT: %+v", c)
	}

	// Validate-only changes nothing.
	r = a.incrementalAlter(kmsg.ConfigResourceTypeTopic, "t", true, alterOp("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil))
	checkAlter(t, "validate-only", r.ErrorCode, r.ErrorMessage, nil, "")
	if c := a.topicConfig("t", "retention.ms"); c.MaybeValue() != "86400000" {
		t.Fatalf("validate-only changed retention.ms: %+v", c)
	}

	for _, tc := range []struct {
		name    string
		res     string
		ops     []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want    *kerr.Error
		wantMsg string
	}{
		{"append to a non-list", "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("retention.ms", kmsg.IncrementalAlterConfigOpAppend, ptrTo("1"))},
			kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"null SET", "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("retention.ms", kmsg.IncrementalAlterConfigOpSet, nil), alterOp("segment.ms", kmsg.IncrementalAlterConfigOpSet, nil)},
			kerr.InvalidRequest, "Null value not supported for : retention.ms, segment.ms"},
		{"duplicate key", "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("retention.ms", kmsg.IncrementalAlterConfigOpSet, ptrTo("1")), alterOp("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil)},
			kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"bad value", "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("min.insync.replicas", kmsg.IncrementalAlterConfigOpSet, ptrTo("0"))}, kerr.InvalidConfig, ""},
		{"one bad op fails all", "t", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("segment.ms", kmsg.IncrementalAlterConfigOpSet, ptrTo("1000")), alterOp("cleanup.policy", kmsg.IncrementalAlterConfigOpSet, ptrTo("bogus"))},
			kerr.InvalidConfig, ""},
		{"unknown topic", "nope", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("retention.ms", kmsg.IncrementalAlterConfigOpSet, ptrTo("1"))},
			kerr.UnknownTopicOrPartition, "The topic 'nope' does not exist."},
	} {
		r := a.incrementalAlter(kmsg.ConfigResourceTypeTopic, tc.res, false, tc.ops...)
		checkAlter(t, tc.name, r.ErrorCode, r.ErrorMessage, tc.want, tc.wantMsg)
	}
	if got := a.b.Metadata().TopicConfigs("t"); len(got) != 2 || got["segment.ms"] != "" {
		t.Fatalf("failed alters changed overrides: %v", got)
	}
}

func TestIncrementalAlterBrokerConfigs(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, nil)
	rs, err := a.adm.AlterBrokerConfigs(a.ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: ptrTo("5400000")}})
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "cluster default", rs[0].Err, nil)
	rcs, err := a.adm.DescribeBrokerConfigs(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rcs.On("", nil)
	if err != nil || len(c.Configs) != 1 || c.Configs[0].Key != "log.retention.ms" ||
		c.Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster defaults: %v %+v", err, c)
	}
	if got := a.log("t", 0).Config().RetentionMs; got != 5400000 {
		t.Fatalf("log retention %d after the cluster default changed", got)
	}

	// This broker's own layer.
	rs, err = a.adm.AlterBrokerConfigs(a.ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: ptrTo("2048")}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "per broker", rs[0].Err, nil)
	if c, _ := a.brokerConfig("1", "message.max.bytes"); c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("message.max.bytes: %+v", c)
	}
	if c := a.topicConfig("t", "max.message.bytes"); c.MaybeValue() != "2048" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("topic max.message.bytes under a per-broker default: %+v", c)
	}

	for _, tc := range []struct {
		name    string
		res     string
		ops     []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want    *kerr.Error
		wantMsg string
	}{
		{"read-only", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("node.id", kmsg.IncrementalAlterConfigOpSet, ptrTo("5"))},
			kerr.InvalidRequest, "Cannot update these configs dynamically: Set(node.id)"},
		{"append to a non-list", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("log.retention.ms", kmsg.IncrementalAlterConfigOpAppend, ptrTo("1"))},
			kerr.InvalidConfig, "Config value append is not allowed for config key: log.retention.ms"},
		{"subtract from an unknown config", "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("no.such", kmsg.IncrementalAlterConfigOpSubtract, ptrTo("1"))},
			kerr.InvalidConfig, "Unknown config name: no.such"},
		{"unknown operation", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("log.retention.ms", kmsg.IncrementalAlterConfigOp(9), ptrTo("1"))},
			kerr.InvalidRequest, "Unknown operations type 9"},
		{"other broker", "7", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			alterOp("log.retention.ms", kmsg.IncrementalAlterConfigOpSet, ptrTo("1"))},
			kerr.InvalidRequest, "Unexpected broker id, expected 1, but received 7"},
	} {
		r := a.incrementalAlter(kmsg.ConfigResourceTypeBroker, tc.res, false, tc.ops...)
		checkAlter(t, tc.name, r.ErrorCode, r.ErrorMessage, tc.want, tc.wantMsg)
	}
	r := a.incrementalAlter(kmsg.ConfigResourceTypeBrokerLogger, "1", false, alterOp("root", kmsg.IncrementalAlterConfigOpSet, ptrTo("DEBUG")))
	checkAlter(t, "broker logger", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest, "")

	// Validate-only, then DELETE.
	r = a.incrementalAlter(kmsg.ConfigResourceTypeBroker, "", true, alterOp("log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil))
	checkAlter(t, "validate-only delete", r.ErrorCode, r.ErrorMessage, nil, "")
	if _, ok := a.brokerConfig("", "log.retention.ms"); !ok {
		t.Fatal("validate-only removed the cluster default")
	}
	r = a.incrementalAlter(kmsg.ConfigResourceTypeBroker, "", false, alterOp("log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil))
	checkAlter(t, "delete", r.ErrorCode, r.ErrorMessage, nil, "")
	if _, ok := a.brokerConfig("", "log.retention.ms"); ok {
		t.Fatal("cluster default still set after DELETE")
	}
	if got := a.log("t", 0).Config().RetentionMs; got != 604800000 {
		t.Fatalf("log retention %d after the cluster default was removed", got)
	}
}
