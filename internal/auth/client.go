package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/xdg-go/scram"

	"github.com/gregor-broker/gregor/internal/config"
)

// ClientMechanism is the SASL mechanism this broker authenticates with
// when it dials this listener (the inter-broker listener) as a client: one
// the listener enables (Kafka's rule for
// sasl.mechanism.inter.broker.protocol), with its
// own credentials, read as Kafka's brokers read them: username and
// password of the login module in
// listener.name.<listener>.<mechanism>.sasl.jaas.config, else in
// sasl.jaas.config. PLAIN and SCRAM-SHA-256/512 are built; a SCRAM
// credential must exist in the metadata before the brokers can use it.
func (l *Listener) ClientMechanism(cfg *config.Broker, mechanism string) (sasl.Mechanism, error) {
	mechanism = strings.ToUpper(mechanism)
	lower := strings.ToLower(l.name)
	if !l.sasl {
		return nil, fmt.Errorf("listener %s (%s) has no SASL", l.name, l.protocol)
	}
	if l.mechanism(mechanism) == nil {
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol (%s) must be included in sasl.enabled.mechanisms (%s) of the %s listener when SASL is used for inter-broker communication",
			mechanism, strings.Join(l.mechanismNames(), ","), l.name)
	}
	switch mechanism {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol=%s: the inter-broker client speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", mechanism)
	}
	key := "listener.name." + lower + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
	text, _, ok := cfg.Value(key)
	if !ok || text == "" {
		key = "sasl.jaas.config"
		text, _, _ = cfg.Value(key)
	}
	if text == "" {
		return nil, fmt.Errorf("listener.name.%s.%s.sasl.jaas.config is not set: the inter-broker client needs its username and password there",
			lower, strings.ToLower(mechanism))
	}
	jaas, err := ParseJAAS(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	user, pass := jaas.Options["username"], jaas.Options["password"]
	if user == "" {
		return nil, fmt.Errorf("%s has no username: the inter-broker client authenticates with its username and password options", key)
	}
	switch mechanism {
	case "PLAIN":
		if jaas.Module != PlainLoginModule {
			return nil, fmt.Errorf("%s: PLAIN needs %s, not %s", key, PlainLoginModule, jaas.Module)
		}
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	default: // SCRAM-SHA-256, SCRAM-SHA-512
		if jaas.Module != ScramLoginModule {
			return nil, fmt.Errorf("%s: %s needs %s, not %s", key, mechanism, ScramLoginModule, jaas.Module)
		}
		hash := scram.SHA256
		if mechanism == "SCRAM-SHA-512" {
			hash = scram.SHA512
		}
		return scramClient{name: mechanism, hash: hash, user: user, pass: pass}, nil
	}
}

// scramClient is the client side of SCRAM (RFC 5802) as Kafka's
// ScramSaslClient speaks it, on xdg-go/scram (which also checks the
// server's signature in its final message).
type scramClient struct {
	name       string
	hash       scram.HashGeneratorFcn
	user, pass string
}

func (m scramClient) Name() string { return m.name }

func (m scramClient) Authenticate(context.Context, string) (sasl.Session, []byte, error) {
	c, err := m.hash.NewClient(m.user, m.pass, "")
	if err != nil {
		return nil, nil, err
	}
	conv := c.NewConversation()
	first, err := conv.Step("")
	if err != nil {
		return nil, nil, err
	}
	return scramSession{conv}, []byte(first), nil
}

type scramSession struct{ conv *scram.ClientConversation }

func (s scramSession) Challenge(in []byte) (bool, []byte, error) {
	out, err := s.conv.Step(string(in))
	if err != nil {
		return false, nil, err
	}
	return s.conv.Done(), []byte(out), nil
}
