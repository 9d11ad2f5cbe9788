package auth

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

// Ports Kafka's SslPrincipalMapperTest.
func TestSSLPrincipalMappingRules(t *testing.T) {
	for _, ok := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := ParseSSLPrincipalMappingRules(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/LU",
	} {
		if _, err := ParseSSLPrincipalMappingRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	m, err := ParseSSLPrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", dn, got, err, want)
		}
	}
	// Rules split on newlines too, and an escaped comma stays in a rule.
	m, err = ParseSSLPrincipalMappingRules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/\nDEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz"); err != nil || got != "Tkac\\, Adam" {
		t.Errorf("escaped comma: %q %v", got, err)
	}
	// Without DEFAULT, a name no rule matches fails authentication.
	m, _ = ParseSSLPrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if _, err := m.Name("CN=x,OU=Other"); err == nil {
		t.Error("a name no rule matches was mapped")
	}
}

// Java prints the subject last RDN first, with its keywords and OID=#hex
// for other attributes.
func TestRFC2253(t *testing.T) {
	name := pkix.Name{
		Country: []string{"US"}, Organization: []string{"Acme, Inc."}, OrganizationalUnit: []string{"eng"},
		CommonName: "client",
		ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b"}},
	}
	der, err := asn1.Marshal(name.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	got, err := RFC2253(der)
	want := `1.2.840.113549.1.9.1=#0c03614062,CN=client,OU=eng,O=Acme\, Inc.,C=US`
	if err != nil || got != want {
		t.Errorf("RFC2253 = %q %v, want %q", got, err, want)
	}
}
