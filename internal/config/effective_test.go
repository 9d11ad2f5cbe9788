package config

import "testing"

func TestEffectiveTopicSources(t *testing.T) {
	b := mustBroker(t, minimal("log.retention.hours", "24", "message.max.bytes", "2000"))
	b, err := b.WithDynamic(kv("log.segment.bytes", "2097152"))
	if err != nil {
		t.Fatal(err)
	}
	entries := EffectiveTopic(b, kv("cleanup.policy", "compact"))
	for _, tc := range []struct {
		name, value string
		src         Source
	}{
		{"cleanup.policy", "compact", SourceDynamicTopic},
		{"segment.bytes", "2097152", SourceDynamicDefaultBroker},
		{"max.message.bytes", "2000", SourceStaticBroker},
		// Unlike DescribeTopic, a retention set only by log.retention.hours
		// is reported with the layer that sets it.
		{"retention.ms", "86400000", SourceStaticBroker},
		{"segment.ms", "604800000", SourceDefault},
	} {
		e := find(t, entries, tc.name)
		if e.Value == nil || *e.Value != tc.value || e.Source != tc.src || len(e.Synonyms) != 0 || e.ReadOnly {
			t.Errorf("%s: %+v, want %s from %s", tc.name, e, tc.value, tc.src)
		}
	}
	for _, e := range entries {
		if e.Name == "internal.segment.bytes" {
			t.Error("internal config listed although not set")
		}
	}
	if d := DescribeTopic(b, nil); find(t, d, "retention.ms").Source != SourceDefault {
		t.Error("DescribeTopic no longer follows Kafka's synonym quirk; update EffectiveTopic's doc")
	}
}
