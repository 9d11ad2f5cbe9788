package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/admin"
)

// The metadata condition holds for broker.session.timeout.ms after the last
// confirmed catch-up, whatever the probes in between said, and then says
// why it does not.
func TestMetadataReadiness(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	grace := 9 * time.Second
	c := catchUp{at: t0, index: 42, behind: "the metadata quorum has no leader"}
	for _, tc := range []struct {
		after time.Duration
		want  admin.State
		has   string
	}{
		{0, admin.Ready, "at index 42, 0s ago"},
		{300 * time.Millisecond, admin.Ready, "300ms ago"},
		{grace, admin.Ready, "9s ago"},
		{grace + time.Millisecond, admin.NotReady, "for 9s (last at index 42, longer than broker.session.timeout.ms 9s): the metadata quorum has no leader"},
		{time.Minute, admin.NotReady, "for 1m0s"},
	} {
		st, detail := metadataReadiness(c, t0.Add(tc.after), grace)
		if st != tc.want || !strings.Contains(detail, tc.has) {
			t.Errorf("%v after: %v %q, want %v containing %q", tc.after, st, detail, tc.want, tc.has)
		}
	}
}
