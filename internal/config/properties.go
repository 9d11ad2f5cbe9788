package config

import (
	"fmt"

	"github.com/magiconair/properties"
)

// LoadProperties reads a Java properties file such as Kafka's
// server.properties: key=value, key:value or "key value" lines, # and !
// comments, backslash line continuations and escapes. Values are returned as
// written; ${…} is not expanded, as Kafka does not expand it. The file is
// read as UTF-8 (Java reads ISO-8859-1; the two agree on ASCII files).
func LoadProperties(path string) (map[string]string, error) {
	l := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := l.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: load %s: %w", path, err)
	}
	return p.Map(), nil
}
