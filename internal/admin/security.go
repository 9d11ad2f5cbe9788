package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Security is the admin listener's protection (gregor.admin.* configs).
type Security struct {
	// TLS, when set, serves HTTPS.
	TLS *tls.Config
	// Auth is "", "none", "basic" or "bearer": what every route but /livez
	// and /readyz requires.
	Auth string
	// Users are basic auth users and their bcrypt password hashes
	// ("user:$2y$..."), for Auth basic.
	Users map[string][]byte
	// Tokens are the bearer tokens accepted, for Auth bearer.
	Tokens []string
	// RecordBrowser serves record contents (the JSON API's records and the
	// console's message browser); off, those routes answer 403.
	RecordBrowser bool
	// Pprof serves /debug/pprof/.
	Pprof bool
}

// ParseUsers reads gregor.admin.auth.users: comma-separated user:hash
// entries, each hash a bcrypt hash (htpasswd -B's format).
func ParseUsers(s string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		user, hash, ok := strings.Cut(e, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("gregor.admin.auth.users: %q is not user:bcrypt-hash", e)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("gregor.admin.auth.users: the hash of %s is not a bcrypt hash (htpasswd -nbB %s PASSWORD makes one): %v", user, user, err)
		}
		out[user] = []byte(hash)
	}
	return out, nil
}

// open is what is served without authentication: health probes.
func open(path string) bool { return path == "/livez" || path == "/readyz" }

// authenticate wraps h with the configured authentication.
func (s *Security) authenticate(h http.Handler) (http.Handler, error) {
	switch s.Auth {
	case "", "none":
		return h, nil
	case "basic":
		if len(s.Users) == 0 {
			return nil, errors.New("gregor.admin.auth=basic needs gregor.admin.auth.users")
		}
	case "bearer":
		if len(s.Tokens) == 0 {
			return nil, errors.New("gregor.admin.auth=bearer needs gregor.admin.auth.tokens")
		}
	default:
		return nil, fmt.Errorf("gregor.admin.auth %q: want none, basic or bearer", s.Auth)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open(r.URL.Path) || s.allowed(r) {
			h.ServeHTTP(w, r)
			return
		}
		if s.Auth == "basic" {
			w.Header().Set("WWW-Authenticate", `Basic realm="gregor admin", charset="UTF-8"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gregor admin"`)
		}
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}), nil
}

func (s *Security) allowed(r *http.Request) bool {
	if s.Auth == "basic" {
		user, password, ok := r.BasicAuth()
		hash, known := s.Users[user]
		if !known {
			// Spend the time a known user would, so the answer does not
			// tell whether the user exists.
			hash = dummyHash
		}
		return ok && bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil && known
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	got := sha256.Sum256([]byte(token))
	match := 0
	for _, t := range s.Tokens {
		want := sha256.Sum256([]byte(t))
		match |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	return match == 1
}

var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("gregor"), bcrypt.DefaultCost)

// recordBrowser guards a route that shows record contents.
func (a *Admin) recordBrowser(h http.Handler) http.Handler {
	if a.sec.RecordBrowser {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the record browser is off: set gregor.admin.record.browser.enable=true to read records here", http.StatusForbidden)
	})
}
