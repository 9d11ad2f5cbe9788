package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func op(name string, o AlterOp, value ...string) AlterEntry {
	e := AlterEntry{Name: name, Op: o}
	if len(value) > 0 {
		e.Value = strPtr(value[0])
	}
	return e
}

func TestApplyIncremental(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current map[string]string
		ops     []AlterEntry
		isTopic bool
		want    map[string]string
		err     error
		msg     string
	}{
		{"set and delete", kv("retention.ms", "1000", "segment.ms", "5000"),
			[]AlterEntry{op("retention.ms", AlterSet, "2000"), op("segment.ms", AlterDelete)}, true,
			kv("retention.ms", "2000"), nil, ""},
		{"set nil deletes", kv("retention.ms", "1000"), []AlterEntry{op("retention.ms", AlterSet)}, true, kv(), nil, ""},
		{"append to unset starts from the default", nil, []AlterEntry{op("cleanup.policy", AlterAppend, "compact")}, true,
			kv("cleanup.policy", "delete,compact"), nil, ""},
		{"append skips values already there", kv("cleanup.policy", "compact"), []AlterEntry{op("cleanup.policy", AlterAppend, "compact,delete")}, true,
			kv("cleanup.policy", "compact,delete"), nil, ""},
		{"subtract", kv("cleanup.policy", "compact,delete"), []AlterEntry{op("cleanup.policy", AlterSubtract, "delete")}, true,
			kv("cleanup.policy", "compact"), nil, ""},
		{"subtract from unset default", nil, []AlterEntry{op("cleanup.policy", AlterSubtract, "delete")}, true,
			kv("cleanup.policy", ""), nil, ""},
		{"subtract a missing value", kv("leader.replication.throttled.replicas", "0:1,1:1"),
			[]AlterEntry{op("leader.replication.throttled.replicas", AlterSubtract, "2:1,0:1")}, true,
			kv("leader.replication.throttled.replicas", "1:1"), nil, ""},
		{"append to an empty-default list", nil, []AlterEntry{op("follower.replication.throttled.replicas", AlterAppend, "0:1")}, true,
			kv("follower.replication.throttled.replicas", "0:1"), nil, ""},
		{"append to non-list", nil, []AlterEntry{op("retention.ms", AlterAppend, "5")}, true,
			nil, ErrInvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"subtract from unknown", nil, []AlterEntry{op("no.such", AlterSubtract, "5")}, true,
			nil, ErrInvalidConfig, "Can't SUBTRACT to key no.such because its type is not LIST."},
		{"append makes an invalid list", kv("cleanup.policy", "delete"), []AlterEntry{op("cleanup.policy", AlterAppend, "archive")}, true,
			nil, ErrInvalidConfig, "Invalid value archive for configuration cleanup.policy"},
		{"set unknown topic config", nil, []AlterEntry{op("retention.mss", AlterSet, "1")}, true,
			nil, ErrInvalidConfig, "Unknown topic config name: retention.mss"},
		{"duplicate keys", nil, []AlterEntry{op("retention.ms", AlterSet, "1"), op("retention.ms", AlterDelete)}, true,
			nil, ErrInvalidRequest, "Error due to duplicate config keys"},
		{"broker append", kv("log.cleanup.policy", "delete"), []AlterEntry{op("log.cleanup.policy", AlterAppend, "compact")}, false,
			kv("log.cleanup.policy", "delete,compact"), nil, ""},
		{"broker read-only", nil, []AlterEntry{op("log.retention.hours", AlterSet, "1")}, false,
			nil, ErrInvalidConfig, "Cannot update these configs dynamically: Set(log.retention.hours)"},
		{"broker unknown names are kept", nil, []AlterEntry{op("plugin.x", AlterSet, "1")}, false,
			kv("plugin.x", "1"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneMap(tc.current)
			got, err := ApplyIncremental(tc.current, tc.ops, tc.isTopic)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %v %q", err, tc.err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if !cmp.Equal(before, cloneMap(tc.current)) {
				t.Error("current was modified")
			}
		})
	}
}

func TestAlterOpNames(t *testing.T) {
	if AlterSet != 0 || AlterDelete != 1 || AlterAppend != 2 || AlterSubtract != 3 {
		t.Fatal("wire numbering changed")
	}
	if AlterSubtract.String() != "SUBTRACT" || AlterOp(9).String() != "UNKNOWN" {
		t.Error("names")
	}
}
