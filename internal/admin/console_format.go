package admin

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/internal/config"
)

// funcs are the console templates' helpers: number, byte, time and URL
// formatting. Every URL a template builds from a name goes through
// url.PathEscape here, so a group id with "/" or "?" stays one segment.
func (c *console) funcs() template.FuncMap {
	return template.FuncMap{
		"num":       formatInt,
		"bytes":     formatBytes,
		"ratio":     func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"pct":       func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" },
		"f1":        func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"ms":        formatUnixMs,
		"time":      formatTime,
		"rel":       func(ms int64) string { return relative(c.a.now(), ms) },
		"ago":       func(t *time.Time) string { return relativeTime(c.a.now(), t) },
		"uptime":    func(t time.Time) string { return formatDuration(c.a.now().Sub(t)) },
		"durMs":     formatDurationMs,
		"dur":       formatDuration,
		"ids":       formatIDs,
		"static":    c.staticURL,
		"topicURL":  topicURL,
		"partURL":   partitionURL,
		"msgURL":    messagesURL,
		"groupURL":  groupURL,
		"configMs":  configMs,
		"isCompact": isCompact,
		"plural":    plural,
		"clampInt":  func(v int64) int { return int(min(max(v, -2), 2)) },
		"int64":     func(v int32) int64 { return int64(v) },
		"pct1":      func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "%" },
		"pctClass":  func(f float64) int { return int(min(max(f, 0), 100)/10) * 10 },
		"sub":       func(a, b int64) int64 { return a - b },
		"lower":     strings.ToLower,
	}
}

func topicURL(topic string) string { return "/ui/topics/" + url.PathEscape(topic) }

func partitionURL(topic string, p int32) string {
	return topicURL(topic) + "/" + strconv.FormatInt(int64(p), 10)
}

func messagesURL(topic string, p int32) string { return partitionURL(topic, p) + "/messages" }

func groupURL(id string) string { return "/ui/groups/" + url.PathEscape(id) }

// formatInt writes n with thousands separators: 4,611,686,018,427,387,904.
func formatInt(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shortOffset is an offset in at most about six characters for the labels
// of the offsets bar (the table under it has the exact numbers): 999,999
// stays as it is, larger ones get a metric suffix.
func shortOffset(n int64) string {
	if n < 1_000_000 && n > -1_000_000 {
		return formatInt(n)
	}
	f := float64(n)
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}} {
		if math.Abs(f) >= u.div {
			return strconv.FormatFloat(f/u.div, 'g', 3, 64) + u.suffix
		}
	}
	return formatInt(n)
}

// formatBytes is n in binary units: 0 B, 512 B, 1.5 KiB, 20 GiB.
func formatBytes(n int64) string {
	if n < 1024 && n > -1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f := float64(n)
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := -1
	for math.Abs(f) >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	prec := 1
	if math.Abs(f) >= 100 {
		prec = 0
	}
	return strconv.FormatFloat(f, 'f', prec, 64) + " " + units[i]
}

// formatUnixMs is a unix-ms timestamp in UTC, or "—" for none (< 0).
func formatUnixMs(ms int64) string {
	if ms < 0 {
		return "—"
	}
	return formatTime(time.UnixMilli(ms))
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	t = t.UTC()
	if t.Nanosecond()/int(time.Millisecond) != 0 {
		return t.Format("2006-01-02 15:04:05.000Z")
	}
	return t.Format("2006-01-02 15:04:05Z")
}

// relative is ms against now: "in 5m", "3h 2m ago", "now".
func relative(now time.Time, ms int64) string {
	if ms < 0 {
		return "—"
	}
	d := time.UnixMilli(ms).Sub(now)
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d > 0:
		return "in " + formatDuration(d)
	default:
		return formatDuration(-d) + " ago"
	}
}

// relativeTime is relative for an optional time ("—" for nil).
func relativeTime(now time.Time, t *time.Time) string {
	if t == nil {
		return "—"
	}
	return relative(now, t.UnixMilli())
}

// formatDuration is d in its two largest units: "3d 4h", "5m 2s", "800ms".
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	units := []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	var parts []string
	for _, u := range units {
		if d >= u.d {
			parts = append(parts, strconv.FormatInt(int64(d/u.d), 10)+u.name)
			d %= u.d
		}
		if len(parts) == 2 {
			break
		}
	}
	return strings.Join(parts, " ")
}

// formatDurationMs is a config value in ms with its meaning: -1 is
// "unlimited", Kafka's encoding of no limit.
func formatDurationMs(ms int64) string {
	if ms < 0 {
		return "unlimited"
	}
	if ms == 0 {
		return "0"
	}
	return formatDuration(time.Duration(ms) * time.Millisecond)
}

// configMs annotates a *.ms config value with its duration, e.g.
// "604800000 (7d)"; other values are returned as they are.
func configMs(name, value string) string {
	if !strings.HasSuffix(name, ".ms") {
		return value
	}
	ms, err := strconv.ParseInt(value, 10, 64)
	if err != nil || ms <= 0 || ms == math.MaxInt64 {
		return value
	}
	return value + " (" + formatDurationMs(ms) + ")"
}

func formatIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(int64(id), 10)
	}
	return strings.Join(s, ", ")
}

func isCompact(policy string) bool { return config.ListContains(policy, "compact") }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
