// Package auth is Gregor's security: TLS for listeners, SASL
// authentication (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) with KIP-368
// re-authentication, principals, and Kafka's StandardAuthorizer over ACLs.
// It follows Kafka 4.2's semantics, configuration names and error messages;
// its cores are pure (time comes from an injected clock.Clock, files and
// URLs through injected functions), and the I/O it does is the TLS
// handshake of the connection it is handed.
//
// The client side, for a broker dialling its peers: Listener.ClientTLS (the
// listener's key store as client certificate, its trust store, host
// verification per ssl.endpoint.identification.algorithm) and
// Listener.ClientMechanism (PLAIN or SCRAM with the username/password of
// the listener's JAAS config; SCRAM on xdg-go/scram's client, which checks
// the server's final signature).
//
// # Listeners and sessions
//
// NewListener builds one listener's security from the broker config, the
// listener.name.<name>. prefixed settings over the plain ones (and, for SASL,
// listener.name.<name>.<mechanism>. over those), refusing what Gregor cannot
// honour (fail closed): a key store that is not PEM, Kerberos, a Java
// callback handler class. Listener.Wrap is the Kafka listener's
// per-connection hook: it wraps the connection in TLS (SSL, SASL_SSL; the
// handshake runs on its first read), maps a client certificate to
// User:<subject> through ssl.principal.mapping.rules (SSL), and returns the
// connection's Session.
//
// A Session holds the connection's principal (ANONYMOUS until
// authenticated) and its SASL state: HANDSHAKE → AUTHENTICATE →
// AUTHENTICATED, or FAILED. Admit tells the request dispatcher whether a
// request may run: ApiVersions, SaslHandshake and SaslAuthenticate always
// (they answer by state); anything else only once authenticated and before
// the session expires; otherwise the connection is closed, as Kafka's
// authenticator closes it (IllegalSaslStateException). A failed
// authentication is answered, counted, logged, and the connection is closed
// after connection.failed.authentication.delay.ms. A session's lifetime is
// the shorter of connections.max.reauth.ms and the credential's expiry (an
// OAUTHBEARER token's exp); SaslAuthenticate v1+ tells the client, a
// SaslHandshake on the authenticated connection re-authenticates it (same
// mechanism, same principal), and a request after expiry closes the
// connection. Session methods run on the connection's request goroutine,
// one at a time, so it holds no lock.
//
// Authenticating is the server's AuthGate: until a SASL session has
// authenticated, while it re-authenticates and after it failed, the server
// reads the connection's requests one at a time (each only once the ones
// before it are answered) and none larger than sasl.server.max.receive.size,
// as Kafka's SaslServerAuthenticator does; pipelining starts after
// authentication, so a request sent behind a SaslAuthenticate is admitted
// against the state that exchange left. A SASL_PLAINTEXT connection's
// wrapper (saslConn) writes through to its TCP socket unchanged and says so
// (server.PlainSocket), so fetches on it keep sendfile(2); under TLS
// (SASL_SSL, SSL) they take the server's copying path.
//
// Mechanisms: PLAIN checks the user_NAME="password" options of the
// listener's PlainLoginModule JAAS entry (constant-time); SCRAM runs
// github.com/xdg-go/scram over credentials stored salted in the metadata
// log (ScramLookup; DeriveScramCredential turns AlterUserScramCredentials'
// salted password into them); OAUTHBEARER validates the bearer token with
// Kafka's unsecured validator (the default, for development) or against a
// JSON Web Key Set (sasl.oauthbearer.jwks.endpoint.url, with
// github.com/go-jose/go-jose, expected audience and issuer, clock skew,
// refetched for unknown key ids). Error messages are Kafka's: its
// SaslAuthenticationException texts go to the client, any other failure
// becomes "Authentication failed during authentication due to invalid
// credentials with SASL mechanism X", so a client cannot learn whether a
// user exists from the text.
//
// TLS: crypto/tls, TLS 1.2 and 1.3 only (ssl.enabled.protocols,
// ssl.protocol caps the version, ssl.cipher.suites restricts TLS 1.2
// suites by IANA name; Go always offers the three TLS 1.3 suites). A PEM
// key store (ssl.keystore.location or the inline key and chain, an
// encrypted PKCS#8 key with ssl.key.password) and a PEM trust store.
// ssl.client.auth required/requested/none; on SASL_SSL only its listener
// prefixed form counts, as in Kafka. Reload rebuilds the configuration
// after an AlterConfigs (a key store changed in place may keep its path):
// new connections use it, open ones keep theirs, and the certificate must
// keep its subject and alternative names unless ssl.allow.dn.changes /
// ssl.allow.san.changes.
//
// # Authorizer
//
// Authorizer is StandardAuthorizer over an immutable ACL set: super.users
// are allowed; a matching DENY beats any ALLOW; ALLOW READ, WRITE, DELETE
// and ALTER imply DESCRIBE, ALLOW ALTER_CONFIGS implies DESCRIBE_CONFIGS
// (DENY implies nothing); an ACL matches its principal or User:*, its host
// (compared as an address) or *, and a resource by literal name, by the
// wildcard *, or by PREFIXED name; a resource no ACL names at all gets
// allow.everyone.if.no.acl.found, one that some ACL names but none allows
// is denied. ACLs are indexed per resource type by literal name and by
// prefix (only the prefix lengths some ACL has are looked up), so a
// question costs a few map lookups however many ACLs there are
// (BenchmarkAuthorize10kACLs: about 0.4µs and no allocation with 10,000).
// AuthorizeByResourceType is Kafka's check for "this operation on any
// resource of the type" (IDEMPOTENT_WRITE through WRITE on any topic).
// Filter is AclBindingFilter for DescribeAcls and DeleteAcls.
//
// # Audit
//
// Audit counts failed and successful authentications and
// re-authentications, expired sessions and authorization denials (per API)
// on /metrics, and logs failures and denials rate-limited (ten lines a
// second per kind; the next line says how many were dropped).
package auth
