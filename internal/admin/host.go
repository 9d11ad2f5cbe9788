package admin

import (
	"net"
	"net/http"
	"strings"
)

// loopbackOnly guards a listener bound to a loopback address against DNS
// rebinding: a web page on another site that resolves its own name to
// 127.0.0.1 could otherwise have a local browser read the console and the
// JSON API. Requests whose Host is not a loopback address or "localhost"
// get 421 Misdirected Request and a log line. A listener bound to any other
// address serves every Host, as the operator chose to expose it.
func (a *Admin) loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.loopback.Load() && !isLoopbackHost(r.Host) {
			a.log.Warn("admin: refusing request for a non-loopback Host on a loopback listener",
				"host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr)
			http.Error(w, "this admin listener is bound to loopback and answers only Host localhost or a loopback address",
				http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopbackHost(hostHeader string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
