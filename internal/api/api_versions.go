package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/server"
)

// ApiVersions, versions 0-4 (Kafka 4.2). Answers with every key registered
// in this package and its exact range. An ApiVersions request newer than 4
// is answered by the server with v0 and UNSUPPORTED_VERSION before it gets here.
func init() { register(kmsg.ApiVersions.Int16(), 0, 4, handleApiVersions) }

func handleApiVersions(_ context.Context, h *Handler, req *server.Request) (kmsg.Response, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ApiKeys = SupportedKeys()
	resp.FinalizedFeaturesEpoch = -1
	return resp, nil
}
