package api_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/internal/broker/brokertest"
	"github.com/gregor-broker/gregor/internal/log"
	"github.com/gregor-broker/gregor/internal/topicpart"
)

// adminAPI is a real broker plus kadm and raw-request helpers for the tests
// of the topic, partition, config and cluster admin APIs.
type adminAPI struct {
	t         *testing.T
	ctx       context.Context
	b         *brokertest.Broker
	overrides map[string]string
	cl        *kgo.Client
	adm       *kadm.Client
}

func newAdminAPI(t *testing.T, overrides map[string]string) *adminAPI {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	t.Cleanup(cancel)
	a := &adminAPI{t: t, ctx: ctx, overrides: overrides}
	a.b = brokertest.Start(t, overrides)
	a.connect()
	return a
}

func (a *adminAPI) connect() {
	a.cl = a.b.Client()
	a.adm = kadm.NewClient(a.cl)
}

// restart stops the broker cleanly and starts a new one on the same data.
func (a *adminAPI) restart() {
	a.t.Helper()
	a.b.Stop()
	a.b = brokertest.StartIn(a.t, a.b.Dir, a.overrides)
	a.connect()
}

// pinned makes a client send key at version v at most.
func (a *adminAPI) pinned(key kmsg.Key, v int16) kgo.Opt {
	vs := kversion.V4_2_0()
	vs.SetMaxKeyVersion(int16(key), v)
	return kgo.MaxVersions(vs)
}

// send sends req unchanged to the broker (no client-side sharding, retries
// or error handling), with a new client built with opts if there are any.
func (a *adminAPI) send(req kmsg.Request, opts ...kgo.Opt) kmsg.Response {
	a.t.Helper()
	cl := a.cl
	if len(opts) > 0 {
		cl = a.b.Client(opts...)
	}
	resp, err := cl.SeedBrokers()[0].Request(a.ctx, req)
	if err != nil {
		a.t.Fatalf("%s request: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func (a *adminAPI) create(name string, partitions int32, configs map[string]*string) kadm.CreateTopicResponse {
	a.t.Helper()
	resp, err := a.adm.CreateTopic(a.ctx, partitions, -1, configs, name)
	if err != nil {
		a.t.Fatalf("create %s: %v", name, err)
	}
	if resp.Err != nil {
		a.t.Fatalf("create %s: %v (%s)", name, resp.Err, resp.ErrMessage)
	}
	return resp
}

func (a *adminAPI) log(topic string, partition int32) *log.Log {
	a.t.Helper()
	p, ok := a.b.Replicas().Get(topicpart.TopicPartition{Topic: topic, Partition: partition})
	if !ok {
		a.t.Fatalf("%s-%d is not hosted", topic, partition)
	}
	return p.Log
}

// topicConfig describes one config of a topic with synonyms.
func (a *adminAPI) topicConfig(topic, name string) kadm.Config {
	a.t.Helper()
	rcs, err := a.adm.DescribeTopicConfigs(a.ctx, topic)
	if err != nil {
		a.t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		a.t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	a.t.Fatalf("topic %s has no config %s", topic, name)
	return kadm.Config{}
}

// brokerConfig describes one config of a broker resource ("" or an id).
func (a *adminAPI) brokerConfig(resource, name string) (kadm.Config, bool) {
	a.t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, resource, []string{name}
	req.Resources = append(req.Resources, rr)
	resp := a.send(req).(*kmsg.DescribeConfigsResponse)
	r := resp.Resources[0]
	if r.ErrorCode != 0 {
		a.t.Fatalf("describe broker %q: %v", resource, kerr.ErrorForCode(r.ErrorCode))
	}
	if len(r.Configs) == 0 {
		return kadm.Config{}, false
	}
	c := r.Configs[0]
	out := kadm.Config{Key: c.Name, Value: c.Value, Sensitive: c.IsSensitive, Source: c.Source}
	for _, s := range c.ConfigSynonyms {
		out.Synonyms = append(out.Synonyms, kadm.ConfigSynonym{Key: s.Name, Value: s.Value, Source: s.Source})
	}
	return out, true
}

// expectKerr fails unless err is the Kafka error want (nil for success).
func expectKerr(t *testing.T, what string, err error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %s", what, err, want.Message)
	}
}

func ptrTo(s string) *string { return &s }
