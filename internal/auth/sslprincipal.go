package auth

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
)

// SSLPrincipalMapper is Kafka's SslPrincipalMapper: ssl.principal.mapping.rules
// turn a client certificate's subject (in RFC 2253 form, as Java's
// X500Principal.getName prints it) into the principal name. Rules are tried
// in order; the first whose pattern matches the whole name gives it.
//
//	DEFAULT                       the distinguished name itself
//	RULE:pattern/replacement/     the name rewritten ($1… are the pattern's groups)
//	RULE:pattern/replacement/L    … then lower-cased (U: upper-cased)
type SSLPrincipalMapper struct {
	rules []sslRule
}

type sslRule struct {
	isDefault    bool
	whole, find  *regexp.Regexp
	replacement  string // in Go's Expand syntax
	lower, upper bool
	text         string
}

var (
	// One rule of the list, as Kafka's RULE_PATTERN: DEFAULT, a RULE with
	// escaped slashes allowed in its parts, or anything (an error).
	sslRuleSplitter = regexp.MustCompile(`\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,\n]*?|[^,\n]*?)\s*(?:[,\n]\s*|$)`)
	sslRuleParser   = regexp.MustCompile(`^(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU])?)$`)
)

// ParseSSLPrincipalMappingRules reads ssl.principal.mapping.rules.
func ParseSSLPrincipalMappingRules(s string) (*SSLPrincipalMapper, error) {
	m := &SSLPrincipalMapper{}
	s = strings.TrimSpace(s)
	for _, sm := range sslRuleSplitter.FindAllStringSubmatch(s, -1) {
		text := sm[1]
		if text == "" {
			continue
		}
		p := sslRuleParser.FindStringSubmatch(text)
		if p == nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: Invalid rule: %s", text)
		}
		if p[1] != "" {
			m.rules = append(m.rules, sslRule{isDefault: true, text: text})
			continue
		}
		find, err := regexp.Compile(p[2])
		if err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %s: %v", text, err)
		}
		whole, err := regexp.Compile(`^(?:` + p[2] + `)$`)
		if err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %s: %v", text, err)
		}
		m.rules = append(m.rules, sslRule{whole: whole, find: find, replacement: javaReplacement(p[3], find.NumSubexp()),
			lower: p[4] == "L", upper: p[4] == "U", text: text})
	}
	if len(m.rules) == 0 && s != "" {
		return nil, fmt.Errorf("ssl.principal.mapping.rules: Invalid rule: %s", s)
	}
	return m, nil
}

// javaReplacement turns a Java replacement string ($n group references,
// backslash escapes) into Go's Expand syntax. A reference to a group the
// pattern does not have is a literal, as Kafka escapes it.
func javaReplacement(r string, groups int) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case c == '$' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			j := i + 1
			n := 0
			// Java takes further digits while the group number stays valid.
			for j < len(r) && r[j] >= '0' && r[j] <= '9' && (j == i+1 || n*10+int(r[j]-'0') <= groups) {
				n = n*10 + int(r[j]-'0')
				j++
			}
			if n > groups {
				b.WriteString("$$")
				continue
			}
			fmt.Fprintf(&b, "${%d}", n)
			i = j - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ErrNoMatchingRule is a certificate subject no rule maps; the connection's
// authentication fails.
var ErrNoMatchingRule = errors.New("no ssl.principal.mapping.rules rule applies")

// Name maps a distinguished name to a principal name.
func (m *SSLPrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.find.ReplaceAllString(dn, r.replacement)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w to %s", ErrNoMatchingRule, dn)
}

// CertificatePrincipal is the principal of a TLS client: User:<mapped
// subject> for a client certificate, ANONYMOUS without one (Kafka's
// DefaultKafkaPrincipalBuilder).
func (m *SSLPrincipalMapper) CertificatePrincipal(certs []*x509.Certificate) (Principal, error) {
	if len(certs) == 0 {
		return Anonymous, nil
	}
	dn, err := RFC2253(certs[0].RawSubject)
	if err != nil {
		return Principal{}, err
	}
	name, err := m.Name(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}

type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name; encoding/asn1 reads a type
// whose name ends in SET as an ASN.1 SET.
type rdnSET []attributeTypeAndValue

// rfc2253Keywords are the attribute types Java's X500Principal.getName
// prints by keyword; every other type is printed as its OID and the hex of
// its DER value.
var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
	"2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

// RFC2253 formats a DER-encoded distinguished name as Java's
// X500Principal.getName() does: RDNs last to first, separated by commas,
// multi-valued RDNs joined by '+', values escaped per RFC 2253.
func RFC2253(der []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || len(rest) != 0 {
		return "", fmt.Errorf("certificate subject does not decode: %v", err)
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, known := rfc2253Keywords[oid]
			s, isString := asn1String(atv.Value)
			if !known || !isString {
				b.WriteString(oid)
				b.WriteString("=#")
				b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
				continue
			}
			b.WriteString(kw)
			b.WriteByte('=')
			b.WriteString(escapeRFC2253(s))
		}
	}
	return b.String(), nil
}

func asn1String(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String:
		return string(v.Bytes), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

func escapeRFC2253(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r):
			b.WriteByte('\\')
		case i == 0 && (r == '#' || r == ' '):
			b.WriteByte('\\')
		case i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
