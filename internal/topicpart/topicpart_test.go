package topicpart

import (
	"reflect"
	"strings"
	"testing"
)

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

func TestStrayDirName(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	tp := TopicPartition{"my-topic", 7}
	name := StrayDirName(tp, id)
	if want := "my-topic-7." + id + "-stray"; name != want {
		t.Fatalf("StrayDirName = %q, want %q", name, want)
	}
	if got, ok := ParseStrayDirName(name); !ok || got != tp {
		t.Fatalf("ParseStrayDirName(%q) = %v, %v", name, got, ok)
	}
	if _, ok := ParseDirName(name); ok {
		t.Fatalf("a stray dir %q parses as a partition dir", name)
	}
	long := TopicPartition{strings.Repeat("t", 249), 123}
	if n := len(StrayDirName(long, id)); n != 255 {
		t.Fatalf("stray name of a 249-byte topic is %d bytes, want 255", n)
	}
	for _, bad := range []string{"a-0-stray", "a-0.-stray", ".x-stray", "a-0.x-delete", "a-x.y-stray"} {
		if _, ok := ParseStrayDirName(bad); ok {
			t.Errorf("%s parsed as a stray dir", bad)
		}
	}
}

// ByTopic keeps the order topics first appear in and each topic's
// partitions in their order, wherever a topic's partitions lie in the list.
func TestByTopic(t *testing.T) {
	got := ByTopic([]TopicPartition{{"b", 2}, {"a", 0}, {"b", 0}, {"c", 5}, {"a", 1}})
	want := []Topic{{"b", []int32{2, 0}}, {"a", []int32{0, 1}}, {"c", []int32{5}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ByTopic = %v, want %v", got, want)
	}
	if got := ByTopic(nil); got != nil {
		t.Errorf("ByTopic(nil) = %v", got)
	}
}
