package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// readyzJSON is the ?format=json body of /readyz.
type readyzJSON struct {
	Ready      bool            `json:"ready"`
	Conditions []conditionJSON `json:"conditions"`
}

type conditionJSON struct {
	Name    string    `json:"name"`
	Ready   bool      `json:"ready"`
	Warning bool      `json:"warning,omitempty"`
	Detail  string    `json:"detail,omitempty"`
	Since   time.Time `json:"since"`
}

// serveReadyz answers 200 when every condition is ready and 503 otherwise,
// listing the conditions either way.
func (a *Admin) serveReadyz(w http.ResponseWriter, r *http.Request) {
	conds, ready := a.readiness()
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch format := r.URL.Query().Get("format"); format {
	case "json":
		body := readyzJSON{Ready: ready, Conditions: make([]conditionJSON, 0, len(conds))}
		for _, c := range conds {
			body.Conditions = append(body.Conditions, conditionJSON{Name: c.name, Ready: c.ready, Warning: c.warn,
				Detail: c.detail, Since: c.since.UTC()})
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(body)
	case "", "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(readyzText(conds, ready)))
	default:
		http.Error(w, fmt.Sprintf("unknown format %q (want text or json)", format), http.StatusBadRequest)
	}
}

// readyzText renders one line per condition, "[+]" ready, "[!]" ready
// with a warning or "[-]" not, with its detail, then a verdict line.
func readyzText(conds []condition, ready bool) string {
	var b strings.Builder
	notReady, warnings := 0, 0
	for _, c := range conds {
		mark, state := "[+]", "ready"
		switch {
		case !c.ready:
			mark, state = "[-]", "not ready"
			notReady++
		case c.warn:
			mark, state = "[!]", "ready with a warning"
			warnings++
		}
		fmt.Fprintf(&b, "%s%s %s since %s", mark, c.name, state, c.since.UTC().Format(time.RFC3339))
		if c.detail != "" {
			fmt.Fprintf(&b, ": %s", c.detail)
		}
		b.WriteByte('\n')
	}
	switch {
	case ready && warnings > 0:
		fmt.Fprintf(&b, "ready, with %d warning(s)\n", warnings)
	case ready:
		b.WriteString("ready\n")
	default:
		fmt.Fprintf(&b, "not ready: %d of %d conditions not ready\n", notReady, len(conds))
	}
	return b.String()
}
