package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JWKSValidator is Kafka's OAuthBearerValidatorCallbackHandler: a signed JWT
// whose key is in the JSON Web Key Set at sasl.oauthbearer.jwks.endpoint.url
// (a file: or https: URL), with exp and iat required, the expected audience
// and issuer when configured, and sasl.oauthbearer.clock.skew.seconds of
// leeway. The key set is fetched when the validator is built, again once
// sasl.oauthbearer.jwks.endpoint.refresh.ms has passed, and at once (but not
// more often than the retry backoff) for a key id it does not hold, so
// rotated keys are picked up.
type JWKSValidator struct {
	cfg JWKSConfig

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
	tried   time.Time
}

// JWKSConfig configures a JWKSValidator.
type JWKSConfig struct {
	URL string
	// Fetch reads the key set at URL (the broker gives one that reads
	// file: URLs through the vfs and https: URLs with a bounded HTTP
	// client).
	Fetch        func(ctx context.Context, url string) ([]byte, error)
	Refresh      time.Duration // sasl.oauthbearer.jwks.endpoint.refresh.ms
	RetryBackoff time.Duration // sasl.oauthbearer.jwks.endpoint.retry.backoff.ms
	Audience     []string      // sasl.oauthbearer.expected.audience
	Issuer       string        // sasl.oauthbearer.expected.issuer
	ClockSkew    time.Duration // sasl.oauthbearer.clock.skew.seconds
	SubClaim     string        // sasl.oauthbearer.sub.claim.name
	ScopeClaim   string        // sasl.oauthbearer.scope.claim.name
}

// signatureAlgorithms are the JWS algorithms accepted: every asymmetric one
// go-jose knows; "none" and the HMAC algorithms (whose key would be in a
// public key set) never.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// NewJWKSValidator fetches the key set once; a key set that cannot be
// fetched or read stops the listener from starting.
func NewJWKSValidator(ctx context.Context, cfg JWKSConfig, now time.Time) (*JWKSValidator, error) {
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = "scope"
	}
	v := &JWKSValidator{cfg: cfg}
	if err := v.fetch(ctx, now); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *JWKSValidator) fetch(ctx context.Context, now time.Time) error {
	v.tried = now
	b, err := v.cfg.Fetch(ctx, v.cfg.URL)
	if err != nil {
		return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: %w", v.cfg.URL, err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: not a JSON Web Key Set: %w", v.cfg.URL, err)
	}
	if len(set.Keys) == 0 {
		return fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: the key set holds no keys", v.cfg.URL)
	}
	v.keys, v.fetched = set, now
	return nil
}

// candidates returns the keys that may have signed a token with key id
// kid, refreshing the set when it is old or lacks kid.
func (v *JWKSValidator) candidates(kid string, now time.Time) []jose.JSONWebKey {
	v.mu.Lock()
	defer v.mu.Unlock()
	stale := v.cfg.Refresh > 0 && now.Sub(v.fetched) >= v.cfg.Refresh
	missing := kid != "" && len(v.keys.Key(kid)) == 0
	if (stale || missing) && now.Sub(v.tried) >= v.cfg.RetryBackoff {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = v.fetch(ctx, now) // on failure the old keys stay in use
		cancel()
	}
	if kid != "" {
		return v.keys.Key(kid)
	}
	var out []jose.JSONWebKey
	for _, k := range v.keys.Keys {
		if k.Use == "" || k.Use == "sig" {
			out = append(out, k)
		}
	}
	return out
}

// Validate checks a signed token.
func (v *JWKSValidator) Validate(token string, now time.Time) (string, time.Time, error) {
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return "", time.Time{}, invalidToken("malformed or unsupported JWT: %v", err)
	}
	if len(tok.Headers) != 1 {
		return "", time.Time{}, invalidToken("a JWT has one signature")
	}
	var std jwt.Claims
	var all map[string]any
	verified := false
	for _, k := range v.candidates(tok.Headers[0].KeyID, now) {
		if tok.Claims(k.Key, &std, &all) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return "", time.Time{}, invalidToken("no key of the key set verifies the signature (kid %q)", tok.Headers[0].KeyID)
	}
	if std.Expiry == nil {
		return "", time.Time{}, invalidToken("No Expiration Time (exp) claim present.")
	}
	if std.IssuedAt == nil {
		return "", time.Time{}, invalidToken("No Issued At (iat) claim present.")
	}
	exp := jwt.Expected{Issuer: v.cfg.Issuer, Time: now}
	if len(v.cfg.Audience) > 0 {
		exp.AnyAudience = v.cfg.Audience
	}
	if err := std.ValidateWithLeeway(exp, v.cfg.ClockSkew); err != nil {
		return "", time.Time{}, invalidToken("%v", err)
	}
	sub, _ := all[v.cfg.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return "", time.Time{}, invalidToken("The principal claim (%s) is missing or empty", v.cfg.SubClaim)
	}
	return sub, std.Expiry.Time(), nil
}
