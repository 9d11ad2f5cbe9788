package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TokenValidator checks an OAUTHBEARER token: Kafka's validator callback
// handlers (the unsecured one, or the JWKS one).
type TokenValidator interface {
	// Validate returns the token's principal name and expiry, or a
	// *TokenError.
	Validate(token string, now time.Time) (principal string, expiry time.Time, err error)
}

// TokenError is a rejected token: Status is RFC 6750's error code
// (invalid_token, insufficient_scope), sent to the client as Kafka's JSON
// error challenge; Reason is logged.
type TokenError struct {
	Status string
	Scope  string
	Reason string
}

func (e *TokenError) Error() string { return e.Status + ": " + e.Reason }

func invalidToken(format string, args ...any) *TokenError {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// challenge is Kafka's OAuthBearerSaslServer.jsonErrorResponse.
func (e *TokenError) challenge() string {
	s := fmt.Sprintf(`{"status":"%s"`, e.Status)
	if e.Scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, e.Scope)
	}
	return s + "}"
}

type oauthMechanism struct {
	v TokenValidator
}

func (m *oauthMechanism) Name() string { return "OAUTHBEARER" }

func (m *oauthMechanism) Start(now time.Time) Exchange { return &oauthExchange{v: m.v, now: now} }

type oauthExchange struct {
	v      TokenValidator
	now    time.Time
	errMsg string // the error challenge sent, awaiting the client's %x01
	user   string
	expiry time.Time
}

// The client's first message (RFC 7628 §3.1), as Kafka's
// OAuthBearerClientInitialResponse reads it.
var (
	oauthInitial = regexp.MustCompile("^n,(?:a=((?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$")
	oauthAuth    = regexp.MustCompile(`^([\w]+)[ ]+([-_.a-zA-Z0-9]+)$`)
)

func (e *oauthExchange) Step(in []byte) ([]byte, bool, error) {
	if len(in) == 1 && in[0] == 0x01 && e.errMsg != "" {
		return nil, false, authFailed("%s", e.errMsg)
	}
	e.errMsg = ""
	m := oauthInitial.FindSubmatch(in)
	if m == nil {
		return nil, false, errors.New("Invalid OAUTHBEARER client first message")
	}
	authzid := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(string(m[1]))
	var auth string
	for _, kv := range strings.Split(strings.TrimSuffix(string(m[2]), "\x01"), "\x01") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "auth" {
			auth = v
		}
	}
	if auth == "" {
		return nil, false, errors.New("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	am := oauthAuth.FindStringSubmatch(auth)
	if am == nil || !strings.EqualFold(am[1], "bearer") {
		return nil, false, fmt.Errorf("Invalid OAUTHBEARER client first message: 'auth' is not a bearer token")
	}
	user, expiry, err := e.v.Validate(am[2], e.now)
	if err != nil {
		var te *TokenError
		if !errors.As(err, &te) {
			te = invalidToken("%v", err)
		}
		e.errMsg = te.challenge()
		return []byte(e.errMsg), false, nil
	}
	if authzid != "" && authzid != user {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, user)
	}
	e.user, e.expiry = user, expiry
	return nil, true, nil
}

func (e *oauthExchange) Outcome() (Principal, time.Time) { return User(e.user), e.expiry }

// UnsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler,
// the default when no validator is configured: it accepts unsigned JWTs
// ({"alg":"none"}) after checking their claims. Not for production; Kafka
// ships it for development and so does Gregor.
type UnsecuredValidator struct {
	PrincipalClaim string // unsecuredValidatorPrincipalClaimName, default sub
	ScopeClaim     string // unsecuredValidatorScopeClaimName, default scope
	RequiredScope  []string
	ClockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs
}

// NewUnsecuredValidator reads the validator's options from the listener's
// OAuthBearerLoginModule JAAS entry.
func NewUnsecuredValidator(opts map[string]string) (*UnsecuredValidator, error) {
	v := &UnsecuredValidator{PrincipalClaim: "sub", ScopeClaim: "scope"}
	if s := opts["unsecuredValidatorPrincipalClaimName"]; strings.TrimSpace(s) != "" {
		v.PrincipalClaim = strings.TrimSpace(s)
	}
	if s := opts["unsecuredValidatorScopeClaimName"]; strings.TrimSpace(s) != "" {
		v.ScopeClaim = strings.TrimSpace(s)
	}
	v.RequiredScope = strings.Fields(opts["unsecuredValidatorRequiredScope"])
	if s := opts["unsecuredValidatorAllowableClockSkewMs"]; s != "" {
		ms, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("Invalid value for unsecuredValidatorAllowableClockSkewMs: %s", s)
		}
		v.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

// Validate follows OAuthBearerValidationUtils: an unsecured JWS, the
// principal claim a string, iat (if any) not in the future, exp present and
// not passed (both with the allowed skew), iat before exp, and the
// required scope present.
func (v *UnsecuredValidator) Validate(token string, now time.Time) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return "", time.Time{}, invalidToken("an unsecured token has three dot-separated parts and no signature")
	}
	var header map[string]any
	if err := decodeJWTPart(parts[0], &header); err != nil {
		return "", time.Time{}, invalidToken("header: %v", err)
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return "", time.Time{}, invalidToken("unsecured token must have alg none, not %q", alg)
	}
	var claims map[string]any
	if err := decodeJWTPart(parts[1], &claims); err != nil {
		return "", time.Time{}, invalidToken("claims: %v", err)
	}
	sub, ok := claims[v.PrincipalClaim].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return "", time.Time{}, invalidToken("The principal name claim (%s) is missing or is not a string", v.PrincipalClaim)
	}
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return "", time.Time{}, invalidToken("Required claim missing: exp")
	}
	if !now.Add(-v.ClockSkew).Before(exp) {
		return "", time.Time{}, invalidToken("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%d ms)",
			now.UnixMilli(), v.ClockSkew.Milliseconds(), exp.UnixMilli())
	}
	if iat, ok := numericDate(claims["iat"]); ok {
		if now.Add(v.ClockSkew).Before(iat) {
			return "", time.Time{}, invalidToken("The Issued At value (%d ms) was after the indicated time (%d ms) plus allowable clock skew (%d ms)",
				iat.UnixMilli(), now.UnixMilli(), v.ClockSkew.Milliseconds())
		}
		if exp.Before(iat) {
			return "", time.Time{}, invalidToken("The Expiration Time time (%d ms) was before the Issued At time (%d ms)", exp.UnixMilli(), iat.UnixMilli())
		}
	}
	scopes := scopeClaim(claims[v.ScopeClaim])
	for _, want := range v.RequiredScope {
		if !slices.Contains(scopes, want) {
			return "", time.Time{}, &TokenError{Status: "insufficient_scope", Scope: strings.Join(v.RequiredScope, " "),
				Reason: fmt.Sprintf("The provided scope (%v) was missing a required scope (%s)", scopes, want)}
		}
	}
	return sub, exp, nil
}

func decodeJWTPart(s string, into any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(into)
}

// numericDate reads a JWT NumericDate (seconds since the epoch, possibly
// fractional).
func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(f * 1000)), true
}

// scopeClaim reads a scope claim: a space-separated string or a list.
func scopeClaim(v any) []string {
	switch s := v.(type) {
	case string:
		return strings.Fields(s)
	case []any:
		var out []string
		for _, x := range s {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
