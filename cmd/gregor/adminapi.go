package main

// The client side of Gregor's admin HTTP API (gregor serve --admin-listen):
// the commands that show state Kafka's protocol does not carry (why,
// cluster) read its /v1 JSON documents.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultAdmin is where `gregor serve` puts its admin listener by default.
const defaultAdmin = "http://127.0.0.1:9644"

// adminFlags are the flags of the commands that read Gregor's admin HTTP
// API (why, cluster): --admin, -o and --timeout.
type adminFlags struct {
	admin string
	outputFlags
}

func (f *adminFlags) register(cmd *cobra.Command, table string) {
	cmd.PersistentFlags().StringVar(&f.admin, "admin", envOr("GREGOR_ADMIN", defaultAdmin), "Gregor's admin HTTP listener, URL or HOST:PORT (GREGOR_ADMIN)")
	f.outputFlags.register(cmd, table, 10*time.Second, "the admin listener")
}

// baseURL is --admin as a URL without a trailing slash; a bare HOST:PORT
// gets http://. Of a comma-separated list (why isr asks each, baseURLs)
// the other commands use the first, so one GREGOR_ADMIN serves them all.
func (f *adminFlags) baseURL() (string, error) {
	first, _, _ := strings.Cut(f.admin, ",")
	s := strings.TrimRight(strings.TrimSpace(first), "/")
	if s == "" {
		return "", errors.New("--admin is empty: give Gregor's admin listener, e.g. " + defaultAdmin)
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--admin %q: want http://HOST:PORT", f.admin)
	}
	return s, nil
}

// maxAdminBody bounds what is read from the admin listener: a partition
// document with a few thousand segments is well under it.
const maxAdminBody = 16 << 20

// adminGet fetches base+path and returns the status and body.
func adminGet(ctx context.Context, base, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	return adminDo(req)
}

// adminDo sends req, asking for JSON, and returns the status and body.
func adminDo(req *http.Request) (int, []byte, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminBody))
	return resp.StatusCode, body, err
}

// notGregorHint says what `gregor command` needs when the listener it was
// pointed at is missing or is not Gregor's.
func notGregorHint(command, base string) string {
	return fmt.Sprintf("`gregor %s` reads the broker's state from Gregor's admin HTTP listener "+
		"(gregor serve --admin-listen, default %s), which Apache Kafka does not have; "+
		"point at it with --admin http://HOST:PORT or GREGOR_ADMIN (--admin is %s)", command, strings.TrimPrefix(defaultAdmin, "http://"), base)
}

// bodyText is an error body as one short line.
func bodyText(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
