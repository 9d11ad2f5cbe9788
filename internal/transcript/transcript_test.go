package transcript

import (
	"math"
	"testing"
)

func TestDurAndRel(t *testing.T) {
	const now = 1_700_000_000_000
	for _, c := range []struct {
		ms   int64
		want string
	}{
		{now, "now"}, {now + 5*3600_000, "now+5h"}, {now + 90*60_000, "now+1h30m"},
		{now + 2*3600_000 + 1, "now+2h0m0.001s"}, {now - 10*3600_000, "now-10h"}, {now + 90_000, "now+1m30s"},
		{now + 250, "now+250ms"}, {now + 3000, "now+3s"}, {now + 5*60_000, "now+5m"}, {math.MaxInt64, "never"},
	} {
		if got := Rel(now, c.ms); got != c.want {
			t.Errorf("Rel(now%+d) = %q, want %q", c.ms-now, got, c.want)
		}
		if c.ms == math.MaxInt64 {
			continue
		}
		if back, err := ParseTime(c.want, now); err != nil || back != c.ms {
			t.Errorf("ParseTime(%q) = %d, %v; want now%+d", c.want, back-now, err, c.ms-now)
		}
	}
}

func TestParseMs(t *testing.T) {
	for s, want := range map[string]int64{"5h": 5 * 3600_000, "30000": 30000, "-1": -1, "max": math.MaxInt64, "250ms": 250} {
		if got, err := ParseMs(s); err != nil || got != want {
			t.Errorf("ParseMs(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	if _, err := ParseMs("soon"); err == nil {
		t.Error("ParseMs(soon) did not fail")
	}
}
