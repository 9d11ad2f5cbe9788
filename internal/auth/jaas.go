package auth

import (
	"fmt"
	"strings"
	"unicode"
)

// JAASEntry is one login module of a sasl.jaas.config value.
type JAASEntry struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// Login module classes Gregor's SASL mechanisms read.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// ParseJAAS reads a sasl.jaas.config value as Kafka's JaasConfig does: one
// login module, "Class flag key=value ... ;", values quoted ("...", with
// backslash escapes) or bare words, // and /* */ comments allowed.
func ParseJAAS(s string) (JAASEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return JAASEntry{}, err
	}
	var entries []JAASEntry
	for i := 0; i < len(toks); {
		if toks[i].quoted || i+1 >= len(toks) {
			return JAASEntry{}, fmt.Errorf("sasl.jaas.config: expected a login module class and a control flag")
		}
		e := JAASEntry{Module: toks[i].text, Flag: strings.ToLower(toks[i+1].text), Options: map[string]string{}}
		switch e.Flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return JAASEntry{}, fmt.Errorf("sasl.jaas.config: invalid control flag %q for login module %s", toks[i+1].text, e.Module)
		}
		i += 2
		for i < len(toks) && !(toks[i].text == ";" && !toks[i].quoted) {
			if i+2 >= len(toks) || toks[i].quoted || toks[i+1].text != "=" || toks[i+1].quoted {
				return JAASEntry{}, fmt.Errorf("sasl.jaas.config: expected key=value options in login module %s", e.Module)
			}
			e.Options[toks[i].text] = toks[i+2].text
			i += 3
		}
		if i >= len(toks) {
			return JAASEntry{}, fmt.Errorf("sasl.jaas.config: login module %s does not end with ';'", e.Module)
		}
		i++
		entries = append(entries, e)
	}
	if len(entries) != 1 {
		return JAASEntry{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(entries))
	}
	return entries[0], nil
}

type jaasToken struct {
	text   string
	quoted bool
}

func isJAASWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_$.", r)
}

func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '/' && i+1 < len(rs) && rs[i+1] == '/':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '/' && i+1 < len(rs) && rs[i+1] == '*':
			end := strings.Index(string(rs[i+2:]), "*/")
			if end < 0 {
				return nil, fmt.Errorf("sasl.jaas.config: unterminated comment")
			}
			i += 2 + len([]rune(string(rs[i+2:])[:end])) + 2
		case r == '"' || r == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(rs) && rs[j] != r; j++ {
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
					switch rs[j] {
					case 'n':
						b.WriteRune('\n')
					case 't':
						b.WriteRune('\t')
					case 'r':
						b.WriteRune('\r')
					default:
						b.WriteRune(rs[j])
					}
					continue
				}
				b.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("sasl.jaas.config: unterminated quoted value")
			}
			out = append(out, jaasToken{text: b.String(), quoted: true})
			i = j + 1
		case isJAASWord(r):
			j := i
			for j < len(rs) && isJAASWord(rs[j]) {
				j++
			}
			out = append(out, jaasToken{text: string(rs[i:j])})
			i = j
		default:
			out = append(out, jaasToken{text: string(r)})
			i++
		}
	}
	return out, nil
}
