package topicpart

import "testing"

func TestParseDirName(t *testing.T) {
	for in, want := range map[string]TopicPartition{"a-0": {"a", 0}, "my-topic-12": {"my-topic", 12}} {
		if got, ok := ParseDirName(in); !ok || got != want {
			t.Fatalf("%s: %v", in, got)
		}
		if got := want.String(); got != in {
			t.Fatalf("String() = %q, want %q", got, in)
		}
	}
	for _, bad := range []string{"a", "a-", "-1", "a-x", "a-0.abc-delete", "a-0-stray"} {
		if _, ok := ParseDirName(bad); ok {
			t.Fatalf("%s parsed", bad)
		}
	}
}
