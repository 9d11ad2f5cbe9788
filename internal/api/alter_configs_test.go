package api_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterConfigs sends a legacy AlterConfigs request for one resource.
func (a *adminAPI) alterConfigs(typ kmsg.ConfigResourceType, name string, validateOnly bool, kv ...string) kmsg.AlterConfigsResponseResource {
	a.t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], ptrTo(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	return a.send(req).(*kmsg.AlterConfigsResponse).Resources[0]
}

func checkAlter(t *testing.T, what string, code int16, msg *string, want *kerr.Error, wantMsg string) {
	t.Helper()
	got := ""
	if msg != nil {
		got = *msg
	}
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if code != wantCode || (wantMsg != "" && got != wantMsg) {
		t.Errorf("%s: got %v %q, want %v %q", what, kerr.ErrorForCode(code), got, want, wantMsg)
	}
}

func TestAlterConfigsReplacesTopicOverrides(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, map[string]*string{"retention.ms": ptrTo("60000"), "cleanup.policy": ptrTo("compact")})

	r := a.alterConfigs(kmsg.ConfigResourceTypeTopic, "t", true, "max.message.bytes", "5000")
	checkAlter(t, "validate-only", r.ErrorCode, r.ErrorMessage, nil, "")
	if c := a.topicConfig("t", "max.message.bytes"); c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("validate-only changed max.message.bytes: %+v", c)
	}

	r = a.alterConfigs(kmsg.ConfigResourceTypeTopic, "t", false, "max.message.bytes", "5000", "retention.ms", "120000")
	checkAlter(t, "alter", r.ErrorCode, r.ErrorMessage, nil, "")
	if c := a.topicConfig("t", "retention.ms"); c.MaybeValue() != "120000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms after alter: %+v", c)
	}
	// The whole set is replaced: cleanup.policy is back to its default.
	if c := a.topicConfig("t", "cleanup.policy"); c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("cleanup.policy after alter: %+v", c)
	}
	// And it takes effect on the log.
	if cfg := a.log("t", 0).Config(); cfg.RetentionMs != 120000 || cfg.MaxMessageBytes != 5000 || cfg.Compact {
		t.Fatalf("log config after alter: retention %d max %d compact %v", cfg.RetentionMs, cfg.MaxMessageBytes, cfg.Compact)
	}

	// kadm's AlterTopicConfigsState sends the same request.
	rs, err := a.adm.AlterTopicConfigsState(a.ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: ptrTo("3600000")}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "AlterTopicConfigsState", rs[0].Err, nil)
	if got := a.b.Metadata().TopicConfigs("t"); len(got) != 1 || got["segment.ms"] != "3600000" {
		t.Fatalf("overrides after replacing: %v", got)
	}
}

func TestAlterConfigsErrors(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, nil)
	for _, tc := range []struct {
		name    string
		typ     kmsg.ConfigResourceType
		res     string
		kv      []string
		want    *kerr.Error
		wantMsg string
	}{
		{"unknown topic", kmsg.ConfigResourceTypeTopic, "nope", []string{"retention.ms", "1000"},
			kerr.UnknownTopicOrPartition, "The topic 'nope' does not exist."},
		// Configs are validated before the topic's existence is checked.
		{"unknown topic, bad value", kmsg.ConfigResourceTypeTopic, "nope", []string{"retention.ms", "x"}, kerr.InvalidConfig, ""},
		{"bad value", kmsg.ConfigResourceTypeTopic, "t", []string{"segment.bytes", "10"}, kerr.InvalidConfig,
			"Invalid value 10 for configuration segment.bytes: Value must be at least 1048576"},
		{"unknown config", kmsg.ConfigResourceTypeTopic, "t", []string{"bogus", "1"}, kerr.InvalidConfig, "Unknown topic config name: bogus"},
		{"duplicate key", kmsg.ConfigResourceTypeTopic, "t", []string{"retention.ms", "1", "retention.ms", "2"},
			kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"default topic", kmsg.ConfigResourceTypeTopic, "", []string{"retention.ms", "1"}, kerr.InvalidRequest,
			"Default topic resources are not allowed."},
		{"invalid topic", kmsg.ConfigResourceTypeTopic, "a b", []string{"retention.ms", "1"}, kerr.InvalidTopicException, ""},
		{"read-only broker config", kmsg.ConfigResourceTypeBroker, "", []string{"log.dirs", "/tmp/x"}, kerr.InvalidRequest,
			"Cannot update these configs dynamically: Set(log.dirs)"},
		{"per-broker config at cluster level", kmsg.ConfigResourceTypeBroker, "", []string{"listeners", "PLAINTEXT://127.0.0.1:0"},
			kerr.InvalidRequest, "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"},
		{"bad broker value", kmsg.ConfigResourceTypeBroker, "", []string{"log.retention.ms", "soon"}, kerr.InvalidRequest, ""},
		{"other broker", kmsg.ConfigResourceTypeBroker, "2", []string{"log.retention.ms", "1000"}, kerr.InvalidRequest,
			"Unexpected broker id, expected 1, but received 2"},
		{"broker id not a number", kmsg.ConfigResourceTypeBroker, "b1", []string{"log.retention.ms", "1000"}, kerr.InvalidRequest,
			"Node id must be an integer, but it is: b1"},
		{"broker logger", kmsg.ConfigResourceTypeBrokerLogger, "1", []string{"root", "DEBUG"}, kerr.InvalidRequest, "Unknown resource type 8"},
	} {
		r := a.alterConfigs(tc.typ, tc.res, false, tc.kv...)
		checkAlter(t, tc.name, r.ErrorCode, r.ErrorMessage, tc.want, tc.wantMsg)
	}
	if got := a.b.Metadata(); len(got.TopicConfigs("t")) != 0 || len(got.ClusterBrokerConfigs()) != 0 {
		t.Fatalf("failed alters changed configs: %v %v", got.TopicConfigs("t"), got.ClusterBrokerConfigs())
	}

	// Null values, and one resource named twice (both fail).
	req := kmsg.NewPtrAlterConfigsRequest()
	for i := 0; i < 2; i++ {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		req.Resources = append(req.Resources, rr)
	}
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name = "log.retention.ms"
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	rs := a.send(req).(*kmsg.AlterConfigsResponse).Resources
	checkAlter(t, "duplicate resource 1", rs[0].ErrorCode, rs[0].ErrorMessage, kerr.InvalidRequest, "Each resource must appear at most once.")
	checkAlter(t, "duplicate resource 2", rs[1].ErrorCode, rs[1].ErrorMessage, kerr.InvalidRequest, "Each resource must appear at most once.")
	checkAlter(t, "null value", rs[2].ErrorCode, rs[2].ErrorMessage, kerr.InvalidRequest, "Null value not supported for : log.retention.ms")
}

func TestAlterConfigsBrokerLayers(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, nil)

	// The cluster default: DYNAMIC_DEFAULT_BROKER_CONFIG, and the topics
	// without an override follow it.
	r := a.alterConfigs(kmsg.ConfigResourceTypeBroker, "", false, "log.retention.ms", "7200000")
	checkAlter(t, "cluster default", r.ErrorCode, r.ErrorMessage, nil, "")
	c, ok := a.brokerConfig("1", "log.retention.ms")
	if !ok || c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("broker log.retention.ms: %+v", c)
	}
	c, ok = a.brokerConfig("", "log.retention.ms")
	if !ok || c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || len(c.Synonyms) != 1 {
		t.Fatalf("cluster default log.retention.ms: %+v", c)
	}
	tc := a.topicConfig("t", "retention.ms")
	if tc.MaybeValue() != "7200000" || tc.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("topic retention.ms under a cluster default: %+v", tc)
	}
	if got := a.log("t", 0).Config().RetentionMs; got != 7200000 {
		t.Fatalf("log retention %d, want the new cluster default", got)
	}

	// This broker's own layer wins over the cluster default.
	r = a.alterConfigs(kmsg.ConfigResourceTypeBroker, "1", false, "log.retention.ms", "3600000")
	checkAlter(t, "per broker", r.ErrorCode, r.ErrorMessage, nil, "")
	c, _ = a.brokerConfig("1", "log.retention.ms")
	if c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) != 3 {
		t.Fatalf("per-broker log.retention.ms: %+v", c)
	}
	if got := a.log("t", 0).Config().RetentionMs; got != 3600000 {
		t.Fatalf("log retention %d, want the per-broker value", got)
	}

	// Replacing the cluster default with nothing removes it.
	r = a.alterConfigs(kmsg.ConfigResourceTypeBroker, "", false)
	checkAlter(t, "clear cluster default", r.ErrorCode, r.ErrorMessage, nil, "")
	if _, ok := a.brokerConfig("", "log.retention.ms"); ok {
		t.Fatal("cluster default still set")
	}
	c, _ = a.brokerConfig("1", "log.retention.ms")
	if c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) != 2 {
		t.Fatalf("after clearing the cluster default: %+v", c)
	}
}
