package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/server"
)

// DescribeUserScramCredentials, version 0. Needs DESCRIBE on the cluster
// (CLUSTER_AUTHORIZATION_FAILED). Answers each user's mechanisms and
// iterations, never salts or keys; no users (or null) means every user.
// A user named twice is DUPLICATE_RESOURCE, one without credentials
// RESOURCE_NOT_FOUND, with Kafka's messages (ScramImage.describe).
func init() { register(kmsg.DescribeUserSCRAMCredentials.Int16(), 0, 0, handleDescribeUserScram) }

func handleDescribeUserScram(_ context.Context, h *Handler, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !h.authz(r).cluster(auth.OpDescribe) {
		setError(&resp.ErrorCode, &resp.ErrorMessage, errClusterDenied, h)
		return resp, nil
	}
	im := h.d.Metadata.Image()
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var all []string
	for _, k := range im.ScramKeys() {
		if _, seen := byUser[k.User]; !seen {
			all = append(all, k.User)
		}
		c, _ := im.ScramCredential(k.User, k.Mechanism)
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = k.Mechanism, c.Iterations
		byUser[k.User] = append(byUser[k.User], info)
	}
	users, dup := all, map[string]bool{}
	if len(req.Users) > 0 {
		users = nil
		seen := map[string]bool{}
		for _, u := range req.Users {
			if seen[u.Name] {
				dup[u.Name] = true
				continue
			}
			seen[u.Name] = true
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		switch {
		case dup[u]:
			setError(&res.ErrorCode, &res.ErrorMessage, fmt.Errorf("%w: Cannot describe SCRAM credentials for the same user twice in a single request: %s", kerr.DuplicateResource, u), h)
		case len(byUser[u]) == 0:
			setError(&res.ErrorCode, &res.ErrorMessage, fmt.Errorf("%w: Attempt to describe a user credential that does not exist: %s", kerr.ResourceNotFound, u), h)
		default:
			res.CredentialInfos = byUser[u]
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
