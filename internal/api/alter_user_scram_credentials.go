package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/controller"
)

// AlterUserScramCredentials, version 0. Needs ALTER on the cluster
// (CLUSTER_AUTHORIZATION_FAILED for every user named). Forwarded to the
// active controller, which validates each deletion and upsertion as
// Kafka's ScramControlManager does and stores the credential derived from
// the client's salted password (never the password).
func init() {
	register(kmsg.AlterUserSCRAMCredentials.Int16(), 0, 0, handleForwarded)
	registerController(kmsg.AlterUserSCRAMCredentials.Int16(), 0, 0, controllerAlterUserScram)
}

// failAlterUserScram answers every user the request names, once, with code.
func failAlterUserScram(req *kmsg.AlterUserSCRAMCredentialsRequest, code int16, msg *string) *kmsg.AlterUserSCRAMCredentialsResponse {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User, res.ErrorCode, res.ErrorMessage = name, code, msg
		resp.Results = append(resp.Results, res)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return resp
}

func controllerAlterUserScram(ctx context.Context, h *ControllerHandler, kr kmsg.Request) (kmsg.Response, uint64, error) {
	req := kr.(*kmsg.AlterUserSCRAMCredentialsRequest)
	creq := &controller.AlterUserScramCredentialsRequest{}
	for _, d := range req.Deletions {
		creq.Deletions = append(creq.Deletions, controller.ScramDeletion{Name: d.Name, Mechanism: auth.ScramMechanismOf(d.Mechanism)})
	}
	for _, u := range req.Upsertions {
		creq.Upsertions = append(creq.Upsertions, controller.ScramUpsertion{Name: u.Name, Mechanism: auth.ScramMechanismOf(u.Mechanism),
			Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	out, index, err := h.d.Controller.AlterUserScramCredentials(ctx, creq)
	if err != nil {
		return failAlterUserScram(req, h.code(err), kafkaMessage(err)), 0, nil
	}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	for _, ur := range out.Results {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = ur.User
		res.ErrorCode, res.ErrorMessage = h.code(ur.Err), kafkaMessage(ur.Err)
		resp.Results = append(resp.Results, res)
	}
	return resp, index, nil
}
