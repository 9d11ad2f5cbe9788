package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/xdg-go/scram"
)

// ScramMechanism is Kafka's ScramMechanism, numbered as in
// AlterUserScramCredentials and the metadata records.
type ScramMechanism int8

const (
	ScramUnknown ScramMechanism = 0
	ScramSHA256  ScramMechanism = 1
	ScramSHA512  ScramMechanism = 2
)

// Iteration bounds of stored credentials (Kafka's ScramMechanism
// minIterations and ScramControlManager.MAX_ITERATIONS).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismOf maps a wire code (unknown codes: ScramUnknown).
func ScramMechanismOf(code int8) ScramMechanism {
	if code == 1 || code == 2 {
		return ScramMechanism(code)
	}
	return ScramUnknown
}

// ScramMechanismNamed maps a SASL mechanism name (SCRAM-SHA-256,
// SCRAM-SHA-512).
func ScramMechanismNamed(name string) ScramMechanism {
	switch strings.ToUpper(name) {
	case "SCRAM-SHA-256":
		return ScramSHA256
	case "SCRAM-SHA-512":
		return ScramSHA512
	}
	return ScramUnknown
}

func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

func (m ScramMechanism) hash() func() hash.Hash {
	if m == ScramSHA512 {
		return sha512.New
	}
	return sha256.New
}

// ScramCredential is a stored SCRAM credential (Kafka's
// UserScramCredentialRecord): never the password, only what verifies it.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// DeriveScramCredential computes the stored credential from a salted
// password, as Kafka's controller does for AlterUserScramCredentials
// (RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
// ServerKey = HMAC(SaltedPassword, "Server Key")).
func DeriveScramCredential(m ScramMechanism, salt, saltedPassword []byte, iterations int32) ScramCredential {
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(m.hash(), key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	h := m.hash()()
	h.Write(mac(saltedPassword, "Client Key"))
	return ScramCredential{Salt: append([]byte(nil), salt...), StoredKey: h.Sum(nil),
		ServerKey: mac(saltedPassword, "Server Key"), Iterations: iterations}
}

// SaltPassword is RFC 5802's Hi(password, salt, iterations), what a client
// sends in AlterUserScramCredentials.
func SaltPassword(m ScramMechanism, password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash(), password, salt, iterations, m.hash()().Size())
}

// ScramLookup finds a user's credential for a mechanism in the current
// metadata.
type ScramLookup func(user string, m ScramMechanism) (ScramCredential, bool)

// scramMechanism is SCRAM-SHA-256 or -512 over github.com/xdg-go/scram,
// with credentials from the metadata log.
type scramMechanism struct {
	m      ScramMechanism
	server *scram.Server
	lookup ScramLookup
}

var errUnknownScramUser = errors.New("Authentication failed: Invalid user credentials")

func newScram(m ScramMechanism, lookup ScramLookup) (*scramMechanism, error) {
	hg := scram.SHA256
	if m == ScramSHA512 {
		hg = scram.SHA512
	}
	server, err := hg.NewServer(func(user string) (scram.StoredCredentials, error) {
		c, ok := lookup(user, m)
		if !ok {
			return scram.StoredCredentials{}, errUnknownScramUser
		}
		if c.Iterations < ScramMinIterations {
			return scram.StoredCredentials{}, fmt.Errorf("Iterations %d is less than the minimum %d for %v", c.Iterations, ScramMinIterations, m)
		}
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
	})
	if err != nil {
		return nil, err
	}
	return &scramMechanism{m: m, server: server.WithNonceGenerator(scramNonce), lookup: lookup}, nil
}

// scramNonce is a server nonce as Kafka's ScramFormatter.secureRandomString
// makes it: random letters and digits. (librdkafka's SCRAM client does not
// cope with the '+' and '/' of a base64 nonce.)
func scramNonce() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func (s *scramMechanism) Name() string { return s.m.String() }

func (s *scramMechanism) Start(time.Time) Exchange {
	return &scramExchange{mech: s, conv: s.server.NewConversation()}
}

type scramExchange struct {
	mech  *scramMechanism
	conv  *scram.ServerConversation
	first bool
	user  string
	// clientFirst and serverFirst are the first two messages, for the
	// final message of a client that repeats its nonce (see lenientFinal).
	clientFirst, serverFirst string
}

func (e *scramExchange) Step(in []byte) ([]byte, bool, error) {
	msg := string(in)
	if !e.first {
		e.first = true
		// Kafka serves one extension, tokenauth, for delegation tokens,
		// which Gregor does not have; the others it refuses.
		if fields := strings.Split(msg, ","); len(fields) > 4 {
			return nil, false, errors.New("Unsupported extensions will not be processed")
		}
		out, err := e.conv.Step(msg)
		if err != nil {
			return nil, false, err
		}
		if a := e.conv.AuthzID(); a != "" && a != e.conv.Username() {
			return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
		}
		e.user = e.conv.Username()
		e.clientFirst, e.serverFirst = msg, out
		return []byte(out), false, nil
	}
	if out, ok, err := e.lenientFinal(msg); ok {
		return out, err == nil, err
	}
	out, err := e.conv.Step(msg)
	if err != nil {
		return nil, false, err
	}
	if !e.conv.Valid() {
		return nil, false, errors.New("Invalid client credentials")
	}
	return []byte(out), true, nil
}

func (e *scramExchange) Outcome() (Principal, time.Time) { return User(e.user), time.Time{} }

// lenientFinal checks a client-final message whose nonce is not the server
// nonce itself but ends with it. librdkafka sends its client nonce before
// the full nonce the server gave, and Kafka accepts that
// (ScramSaslServer.verifyClientProof checks endsWith); xdg-go/scram wants
// the nonce exactly, so such a message is verified here with RFC 5802's
// definitions over the same stored credential. ok is false when the
// message is for xdg-go/scram (the nonce is exact, or wrong).
func (e *scramExchange) lenientFinal(msg string) (out []byte, ok bool, err error) {
	proofAt := strings.LastIndex(msg, ",p=")
	fields := strings.Split(msg, ",")
	if proofAt < 0 || len(fields) < 3 || !strings.HasPrefix(fields[0], "c=") || !strings.HasPrefix(fields[1], "r=") {
		return nil, false, nil
	}
	nonce := strings.TrimPrefix(fields[1], "r=")
	serverNonce := strings.TrimPrefix(strings.Split(e.serverFirst, ",")[0], "r=")
	if nonce == serverNonce || !strings.HasSuffix(nonce, serverNonce) {
		return nil, false, nil
	}
	gs2 := strings.Join(strings.SplitN(e.clientFirst, ",", 3)[:2], ",") + ","
	if fields[0] != "c="+base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return nil, true, errors.New("channel binding does not match the client's first message")
	}
	cred, found := e.mech.lookup(e.user, e.mech.m)
	proof, perr := base64.StdEncoding.DecodeString(msg[proofAt+3:])
	if !found || perr != nil {
		return nil, true, errors.New("Invalid client credentials")
	}
	clientFirstBare := strings.SplitN(e.clientFirst, ",", 3)[2]
	authMessage := clientFirstBare + "," + e.serverFirst + "," + msg[:proofAt]
	mac := func(key []byte) []byte {
		h := hmac.New(e.mech.m.hash(), key)
		h.Write([]byte(authMessage))
		return h.Sum(nil)
	}
	clientSig := mac(cred.StoredKey)
	if len(proof) != len(clientSig) {
		return nil, true, errors.New("Invalid client credentials")
	}
	for i := range proof {
		proof[i] ^= clientSig[i]
	}
	h := e.mech.m.hash()()
	h.Write(proof)
	if !hmac.Equal(h.Sum(nil), cred.StoredKey) {
		return nil, true, errors.New("Invalid client credentials")
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(cred.ServerKey))), true, nil
}
