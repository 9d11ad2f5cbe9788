package api_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Gregor has no tiered storage: remote.storage.enable=true is refused with
// INVALID_CONFIG and Kafka's message (LogConfig's check on a broker without
// remote.log.storage.system.enable) by CreateTopics, AlterConfigs and
// IncrementalAlterConfigs alike, and the topic keeps its configs.
func TestRemoteStorageEnableRefused(t *testing.T) {
	a := newAdminAPI(t, nil)
	const msg = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
	rs, err := a.adm.CreateTopics(a.ctx, 1, 1, map[string]*string{"remote.storage.enable": ptrTo("true")}, "tiered")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "CreateTopics", rs["tiered"].Err, kerr.InvalidConfig)
	if rs["tiered"].ErrMessage != msg {
		t.Errorf("CreateTopics message %q, want %q", rs["tiered"].ErrMessage, msg)
	}
	if a.b.Metadata().Topic("tiered") != nil {
		t.Fatal("the topic was created")
	}

	a.create("local", 1, map[string]*string{"remote.storage.enable": ptrTo("false")})
	on := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "remote.storage.enable", Value: ptrTo("true")}}
	ir, err := a.adm.AlterTopicConfigs(a.ctx, on, "local")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "IncrementalAlterConfigs", ir[0].Err, kerr.InvalidConfig)
	if ir[0].ErrMessage != msg {
		t.Errorf("IncrementalAlterConfigs message %q, want %q", ir[0].ErrMessage, msg)
	}
	lr, err := a.adm.AlterTopicConfigsState(a.ctx, on, "local")
	if err != nil {
		t.Fatal(err)
	}
	expectKerr(t, "AlterConfigs", lr[0].Err, kerr.InvalidConfig)
	if lr[0].ErrMessage != msg {
		t.Errorf("AlterConfigs message %q, want %q", lr[0].ErrMessage, msg)
	}
	if v := a.b.Metadata().TopicConfigs("local")["remote.storage.enable"]; v != "false" {
		t.Fatalf("remote.storage.enable is %q after refused alters", v)
	}
}
