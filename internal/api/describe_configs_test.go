package api_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeTopicConfigs(t *testing.T) {
	a := newAdminAPI(t, map[string]string{"log.retention.hours": "48", "log.segment.bytes": "2097152", "message.max.bytes": "500000"})
	a.create("events", 1, map[string]*string{"retention.ms": ptrTo("60000"), "max.message.bytes": ptrTo("20000")})

	// An override with broker synonyms: the override, then the broker
	// config in each layer that sets it, highest priority first.
	got := a.topicConfig("events", "max.message.bytes")
	want := kadm.Config{Key: "max.message.bytes", Value: ptrTo("20000"), Source: kmsg.ConfigSourceDynamicTopicConfig,
		Synonyms: []kadm.ConfigSynonym{
			{Key: "max.message.bytes", Value: ptrTo("20000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
			{Key: "message.max.bytes", Value: ptrTo("500000"), Source: kmsg.ConfigSourceStaticBrokerConfig},
			{Key: "message.max.bytes", Value: ptrTo("1048588"), Source: kmsg.ConfigSourceDefaultConfig},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("max.message.bytes (-want +got):\n%s", diff)
	}

	got = a.topicConfig("events", "retention.ms")
	want = kadm.Config{Key: "retention.ms", Value: ptrTo("60000"), Source: kmsg.ConfigSourceDynamicTopicConfig,
		Synonyms: []kadm.ConfigSynonym{
			{Key: "retention.ms", Value: ptrTo("60000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		}}
	// Kafka drops broker synonyms listed before the first one's own name
	// (log.retention.ms), so log.retention.hours does not appear.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retention.ms (-want +got):\n%s", diff)
	}
	got = a.topicConfig("events", "segment.bytes")
	want = kadm.Config{Key: "segment.bytes", Value: ptrTo("2097152"), Source: kmsg.ConfigSourceStaticBrokerConfig,
		Synonyms: []kadm.ConfigSynonym{
			{Key: "log.segment.bytes", Value: ptrTo("2097152"), Source: kmsg.ConfigSourceStaticBrokerConfig},
			{Key: "log.segment.bytes", Value: ptrTo("1073741824"), Source: kmsg.ConfigSourceDefaultConfig},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("segment.bytes (-want +got):\n%s", diff)
	}
	got = a.topicConfig("events", "cleanup.policy")
	if got.MaybeValue() != "delete" || got.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("cleanup.policy: %+v", got)
	}

	// Name filter, documentation and types (v3+), no synonyms unless asked.
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "events"
	rr.ConfigNames = []string{"retention.ms", "min.cleanable.dirty.ratio", "no.such.config"}
	req.Resources = append(req.Resources, rr)
	resp := a.send(req).(*kmsg.DescribeConfigsResponse)
	r := resp.Resources[0]
	if r.ErrorCode != 0 || len(r.Configs) != 2 {
		t.Fatalf("filtered describe: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Configs)
	}
	for _, c := range r.Configs {
		if c.Documentation == nil || *c.Documentation == "" || len(c.ConfigSynonyms) != 0 || c.ReadOnly || c.IsSensitive {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	types := map[string]kmsg.ConfigType{}
	for _, c := range r.Configs {
		types[c.Name] = c.ConfigType
	}
	if types["retention.ms"] != kmsg.ConfigTypeLong || types["min.cleanable.dirty.ratio"] != kmsg.ConfigTypeDouble {
		t.Errorf("types: %v", types)
	}

	// Every topic config is described when no names are given.
	rcs, err := a.adm.DescribeTopicConfigs(a.ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rcs[0].Configs); n < 30 {
		t.Errorf("only %d topic configs described", n)
	}
}

func TestDescribeConfigsErrors(t *testing.T) {
	a := newAdminAPI(t, nil)
	a.create("t", 1, nil)
	describe := func(resources ...kmsg.DescribeConfigsRequestResource) []kmsg.DescribeConfigsResponseResource {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Resources = resources
		return a.send(req).(*kmsg.DescribeConfigsResponse).Resources
	}
	res := func(typ kmsg.ConfigResourceType, name string) kmsg.DescribeConfigsRequestResource {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		return rr
	}
	for _, tc := range []struct {
		name string
		rr   kmsg.DescribeConfigsRequestResource
		want *kerr.Error
		msg  string
	}{
		{"unknown topic", res(kmsg.ConfigResourceTypeTopic, "nope"), kerr.UnknownTopicOrPartition, ""},
		{"invalid topic", res(kmsg.ConfigResourceTypeTopic, "a/b"), kerr.InvalidTopicException,
			"Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"other broker", res(kmsg.ConfigResourceTypeBroker, "2"), kerr.InvalidRequest,
			"Unexpected broker id, expected 1 or empty string, but received 2"},
		{"broker not a number", res(kmsg.ConfigResourceTypeBroker, "one"), kerr.InvalidRequest,
			"Broker id must be an integer, but it is: one"},
		{"broker logger without id", res(kmsg.ConfigResourceTypeBrokerLogger, ""), kerr.InvalidRequest, "Broker id must not be empty"},
		{"group", res(kmsg.ConfigResourceTypeGroupConfig, "g"), kerr.InvalidRequest, "Gregor does not support GROUP_CONFIG config resources"},
	} {
		r := describe(tc.rr)[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != tc.want.Code || msg != tc.msg || len(r.Configs) != 0 {
			t.Errorf("%s: got %v %q (%d configs), want %s %q", tc.name, kerr.ErrorForCode(r.ErrorCode), msg, len(r.Configs), tc.want.Message, tc.msg)
		}
	}

	// A resource type Kafka does not know fails the whole request.
	rs := describe(res(kmsg.ConfigResourceTypeTopic, "t"), res(kmsg.ConfigResourceType(3), "x"))
	if len(rs) != 2 || rs[0].ErrorCode != kerr.InvalidRequest.Code || rs[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown resource type: %+v", rs)
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	a := newAdminAPI(t, map[string]string{"num.partitions": "3"})
	c, ok := a.brokerConfig("1", "num.partitions")
	if !ok || c.MaybeValue() != "3" || c.Source != kmsg.ConfigSourceStaticBrokerConfig || len(c.Synonyms) != 2 {
		t.Fatalf("num.partitions: %+v", c)
	}
	c, ok = a.brokerConfig("1", "log.dirs")
	if !ok || c.MaybeValue() != a.b.Dir || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("log.dirs: %+v", c)
	}

	// Read-only and sensitive flags.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	rr.ConfigNames = []string{"log.dirs", "log.retention.ms", "ssl.keystore.password"}
	req.Resources = append(req.Resources, rr)
	flags := map[string][2]bool{}
	for _, c := range a.send(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		flags[c.Name] = [2]bool{c.ReadOnly, c.IsSensitive}
		if c.IsSensitive && c.Value != nil {
			t.Errorf("%s: sensitive value shown", c.Name)
		}
	}
	if flags["log.dirs"] != [2]bool{true, false} || flags["log.retention.ms"] != [2]bool{false, false} ||
		flags["ssl.keystore.password"] != [2]bool{false, true} {
		t.Fatalf("read-only/sensitive flags: %v", flags)
	}

	// The cluster-default resource lists only what is set there.
	rcs, err := a.adm.DescribeBrokerConfigs(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil || len(rcs[0].Configs) != 0 {
		t.Fatalf("cluster defaults before any change: %+v", rcs)
	}
}
