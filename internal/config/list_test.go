package config

import "testing"

func TestListContains(t *testing.T) {
	for _, tc := range []struct {
		raw, item string
		want      bool
	}{
		{"compact", "compact", true},
		{" compact , delete ", "delete", true},
		{"compact,delete", "compact", true},
		{"delete", "compact", false},
		{"compacted", "compact", false},
		{"", "compact", false},
	} {
		if got := ListContains(tc.raw, tc.item); got != tc.want {
			t.Errorf("ListContains(%q, %q) = %v, want %v", tc.raw, tc.item, got, tc.want)
		}
	}
}
