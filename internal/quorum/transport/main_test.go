package transport

import (
	"testing"

	"go.uber.org/goleak"
)

// Every sender, accept loop and connection reader must be gone once the
// tests have closed their transports and nodes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
