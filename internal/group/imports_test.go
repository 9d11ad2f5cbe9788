package group

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlySerialisationImportsKmsg enforces DESIGN §3: protocol types stay
// in records.go; the state machine and the coord runtime use Gregor's types.
func TestOnlySerialisationImportsKmsg(t *testing.T) {
	for _, dir := range []string{".", "../coord"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "records.go" && dir == "." {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				if strings.Contains(imp.Path.Value, "franz-go/pkg/kmsg") {
					t.Errorf("%s imports kmsg; only records.go may", f)
				}
			}
		}
	}
}
