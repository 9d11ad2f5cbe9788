package main

// How the client-side tools authenticate: TLS (--tls-*) and SASL
// (--sasl-*) flags, each with a GREGOR_* environment variable, turned into
// kgo options.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// securityFlags are the TLS and SASL settings of a client connection.
type securityFlags struct {
	tls        bool
	caFile     string
	certFile   string
	keyFile    string
	serverName string
	mechanism  string
	user       string
	password   string
	token      string
}

func (f *securityFlags) register(fs interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
}) {
	fs.BoolVar(&f.tls, "tls", os.Getenv("GREGOR_TLS") == "true", "connect with TLS (GREGOR_TLS=true; implied by the other --tls-* flags)")
	fs.StringVar(&f.caFile, "tls-ca", os.Getenv("GREGOR_TLS_CA"), "PEM file of the CAs that sign the brokers' certificates (GREGOR_TLS_CA; default: the system's)")
	fs.StringVar(&f.certFile, "tls-cert", os.Getenv("GREGOR_TLS_CERT"), "PEM client certificate for mutual TLS (GREGOR_TLS_CERT)")
	fs.StringVar(&f.keyFile, "tls-key", os.Getenv("GREGOR_TLS_KEY"), "PEM private key of --tls-cert (GREGOR_TLS_KEY)")
	fs.StringVar(&f.serverName, "tls-server-name", os.Getenv("GREGOR_TLS_SERVER_NAME"), "name to verify the brokers' certificates against (GREGOR_TLS_SERVER_NAME; default: the host dialed)")
	fs.StringVar(&f.mechanism, "sasl-mechanism", os.Getenv("GREGOR_SASL_MECHANISM"), "SASL mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (GREGOR_SASL_MECHANISM)")
	fs.StringVar(&f.user, "sasl-user", os.Getenv("GREGOR_SASL_USER"), "SASL user name (GREGOR_SASL_USER)")
	fs.StringVar(&f.password, "sasl-password", os.Getenv("GREGOR_SASL_PASSWORD"), "SASL password (GREGOR_SASL_PASSWORD; prefer the variable, a flag shows in ps)")
	fs.StringVar(&f.token, "sasl-token", os.Getenv("GREGOR_SASL_TOKEN"), "OAUTHBEARER token (GREGOR_SASL_TOKEN)")
}

// opts turns the settings into kgo options.
func (f *securityFlags) opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if f.tls || f.caFile != "" || f.certFile != "" || f.keyFile != "" || f.serverName != "" {
		cfg, err := f.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if f.mechanism != "" {
		m, err := f.saslMechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func (f *securityFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.caFile != "" {
		b, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", f.caFile)
		}
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (f *securityFlags) saslMechanism() (sasl.Mechanism, error) {
	switch strings.ToUpper(f.mechanism) {
	case "PLAIN":
		return plain.Auth{User: f.user, Pass: f.password}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: f.user, Pass: f.password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: f.user, Pass: f.password}.AsSha512Mechanism(), nil
	case "OAUTHBEARER":
		if f.token == "" {
			return nil, fmt.Errorf("--sasl-mechanism OAUTHBEARER needs --sasl-token")
		}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: f.token}, nil }), nil
	}
	return nil, fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", f.mechanism)
}

// registerPersistent adds the flags to a command group.
func (f *securityFlags) registerPersistent(cmd *cobra.Command) { f.register(cmd.PersistentFlags()) }
