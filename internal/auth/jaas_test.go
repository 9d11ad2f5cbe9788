package auth

import "testing"

func TestParseJAAS(t *testing.T) {
	e, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		/* the broker's own */ username="admin" password="admin\"secret"
		user_admin=admin-secret // a bare word
		user_alice="alice secret";`)
	if err != nil {
		t.Fatal(err)
	}
	if e.Module != PlainLoginModule || e.Flag != "required" || e.Options["password"] != `admin"secret` ||
		e.Options["user_admin"] != "admin-secret" || e.Options["user_alice"] != "alice secret" {
		t.Errorf("%+v", e)
	}
	for _, bad := range []string{
		"", "x.Module required", "x.Module wanted;", `x.Module required a=;`, `x.Module required a="b`,
		`x.A required; y.B required;`,
	} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
