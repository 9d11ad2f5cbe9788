package controller

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/metadata"
)

// ACLs and SCRAM credentials: Kafka's AclControlManager and
// ScramControlManager.

// CreateAclsRequest is CreateAcls (key 30). The api layer has refused
// ACLs with UNKNOWN fields (Kafka closes the connection for those).
type CreateAclsRequest struct {
	Creations []auth.Binding
}

// CreateAclsResponse has one result per creation, in order: nil, or an
// INVALID_REQUEST error with Kafka's message.
type CreateAclsResponse struct {
	Results []error
}

// DeleteAclsRequest is DeleteAcls (key 31).
type DeleteAclsRequest struct {
	Filters []auth.Filter
}

// DeleteAclsResponse has one result per filter, in order.
type DeleteAclsResponse struct {
	Results []DeleteAclsResult
}

// DeleteAclsResult is what one filter deleted (every ACL it matched, even
// one another filter of the request matched too).
type DeleteAclsResult struct {
	Err     error
	Deleted []auth.Binding
}

// AlterUserScramCredentialsRequest is AlterUserScramCredentials (key 51).
type AlterUserScramCredentialsRequest struct {
	Deletions  []ScramDeletion
	Upsertions []ScramUpsertion
}

// ScramDeletion removes a user's credential for a mechanism.
type ScramDeletion struct {
	Name      string
	Mechanism auth.ScramMechanism
}

// ScramUpsertion sets a user's credential: the client salted the password.
type ScramUpsertion struct {
	Name           string
	Mechanism      auth.ScramMechanism
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// AlterUserScramCredentialsResponse has one result per user: the users
// deleted, then the users upserted, in request order, then the users that
// failed, in the order they first appear.
type AlterUserScramCredentialsResponse struct {
	Results []UserResult
}

// UserResult is one user's outcome.
type UserResult struct {
	User string
	Err  error
}

func (*CreateAclsRequest) request()                {}
func (*DeleteAclsRequest) request()                {}
func (*AlterUserScramCredentialsRequest) request() {}

// ToACL and FromACL convert between the authorizer's binding and the
// metadata record's ACL.
func ToACL(b auth.Binding) metadata.ACL {
	return metadata.ACL{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName, PatternType: int8(b.PatternType),
		Principal: b.Principal, Host: b.Host, Operation: int8(b.Operation), Permission: int8(b.Permission)}
}

func FromACL(a metadata.ACL) auth.Binding {
	return auth.Binding{ResourceType: auth.ResourceTypeOf(a.ResourceType), ResourceName: a.ResourceName,
		PatternType: auth.PatternTypeOf(a.PatternType), Principal: a.Principal, Host: a.Host,
		Operation: auth.OperationOf(a.Operation), Permission: auth.PermissionOf(a.Permission)}
}

// Bindings returns the image's ACLs as the authorizer takes them.
func Bindings(im *metadata.Image) []auth.Binding {
	out := make([]auth.Binding, 0, im.NumACLs())
	for _, a := range im.ACLs() {
		out = append(out, FromACL(a))
	}
	return out
}

// createAcls writes decideCreateAcls' records.
func (c *Core) createAcls(w *write, r *CreateAclsRequest) built {
	recs, resp := decideCreateAcls(w.im.ACLs(), c.cfg.NewTopicID, r)
	w.emit(recs...)
	return answer(resp, nil)
}

// decideCreateAcls validates each ACL (Kafka's broker checks, then
// validateNewAcl) and makes one AccessControlEntry, under a fresh id, for
// each valid ACL that does not exist yet; an existing one succeeds without
// a record, as in Kafka.
func decideCreateAcls(acls map[[16]byte]metadata.ACL, newID func() metadata.TopicID, r *CreateAclsRequest) ([]metadata.Record, *CreateAclsResponse) {
	existing := map[metadata.ACL]bool{}
	for _, a := range acls {
		existing[a] = true
	}
	fresh := map[[16]byte]bool{}
	resp := &CreateAclsResponse{Results: make([]error, len(r.Creations))}
	var recs []metadata.Record
	for i, b := range r.Creations {
		if err := auth.ValidateNew(b); err != nil {
			resp.Results[i] = aclError(err)
			continue
		}
		a := ToACL(b)
		if existing[a] {
			continue
		}
		existing[a] = true
		id := [16]byte(newID())
		for _, taken := acls[id]; taken || fresh[id]; _, taken = acls[id] {
			id = [16]byte(newID())
		}
		fresh[id] = true
		recs = append(recs, metadata.AccessControlEntry{ID: id, ACL: a})
	}
	return recs, resp
}

// aclError words an invalid ACL as Kafka answers it: INVALID_REQUEST with
// the reason.
func aclError(err error) error {
	return fmt.Errorf("%w: %s", kerr.InvalidRequest, strings.TrimPrefix(err.Error(), auth.ErrInvalidACL.Error()+": "))
}

// deleteAcls writes decideDeleteAcls' records.
func (c *Core) deleteAcls(w *write, r *DeleteAclsRequest) built {
	recs, resp := decideDeleteAcls(w.im.ACLs(), r)
	w.emit(recs...)
	return answer(resp, nil)
}

// decideDeleteAcls removes every ACL some filter matches, each once, and
// answers per filter with the ACLs it matched.
func decideDeleteAcls(acls map[[16]byte]metadata.ACL, r *DeleteAclsRequest) ([]metadata.Record, *DeleteAclsResponse) {
	ids := make([][16]byte, 0, len(acls))
	for id := range acls {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	resp := &DeleteAclsResponse{Results: make([]DeleteAclsResult, len(r.Filters))}
	removed := map[[16]byte]bool{}
	var recs []metadata.Record
	for i, f := range r.Filters {
		if f.ResourceType == auth.ResourceUnknown || f.PatternType == auth.PatternUnknown {
			resp.Results[i].Err = fmt.Errorf("%w: Unknown patternFilter.", kerr.InvalidRequest)
			continue
		}
		if f.Operation == auth.OpUnknown || f.Permission == auth.PermissionUnknown {
			resp.Results[i].Err = fmt.Errorf("%w: Unknown entryFilter.", kerr.InvalidRequest)
			continue
		}
		for _, id := range ids {
			b := FromACL(acls[id])
			if !f.Matches(b) {
				continue
			}
			resp.Results[i].Deleted = append(resp.Results[i].Deleted, b)
			if !removed[id] {
				removed[id] = true
				recs = append(recs, metadata.RemoveAccessControlEntry{ID: id})
			}
		}
		slices.SortFunc(resp.Results[i].Deleted, auth.Compare)
	}
	return recs, resp
}

// alterScram writes decideAlterScram's records.
func (c *Core) alterScram(w *write, r *AlterUserScramCredentialsRequest) built {
	recs, resp := decideAlterScram(func(user string, m int8) bool {
		_, ok := w.im.ScramCredential(user, m)
		return ok
	}, r)
	w.emit(recs...)
	return answer(resp, nil)
}

// decideAlterScram is Kafka's ScramControlManager.alterCredentials: a user
// named twice in one request fails (DUPLICATE_RESOURCE) with every
// alteration of it; each deletion and upsertion is validated (an empty
// name, an unknown mechanism, a credential that does not exist, too few or
// too many iterations); the stored credential is derived from the salted
// password.
func decideAlterScram(exists func(user string, m int8) bool, r *AlterUserScramCredentialsRequest) ([]metadata.Record, *AlterUserScramCredentialsResponse) {
	failed := map[string]error{}
	var failedOrder []string
	fail := func(user string, err error) {
		if _, ok := failed[user]; !ok {
			failedOrder = append(failedOrder, user)
		}
		failed[user] = err
	}
	dup := fmt.Errorf("%w: A user credential cannot be altered twice in the same request", kerr.DuplicateResource)
	deletions, upserts := map[string]ScramDeletion{}, map[string]ScramUpsertion{}
	var delOrder, upOrder []string
	for _, d := range r.Deletions {
		if _, bad := failed[d.Name]; bad {
			continue
		}
		if _, twice := deletions[d.Name]; twice {
			delete(deletions, d.Name)
			fail(d.Name, dup)
			continue
		}
		if err := validateScramDeletion(exists, d); err != nil {
			fail(d.Name, err)
			continue
		}
		deletions[d.Name] = d
		delOrder = append(delOrder, d.Name)
	}
	for _, u := range r.Upsertions {
		if _, bad := failed[u.Name]; bad {
			continue
		}
		_, del := deletions[u.Name]
		_, up := upserts[u.Name]
		if del || up {
			delete(deletions, u.Name)
			delete(upserts, u.Name)
			fail(u.Name, dup)
			continue
		}
		if err := validateScramUpsertion(u); err != nil {
			fail(u.Name, err)
			continue
		}
		upserts[u.Name] = u
		upOrder = append(upOrder, u.Name)
	}
	resp := &AlterUserScramCredentialsResponse{}
	var recs []metadata.Record
	for _, name := range delOrder {
		if d, ok := deletions[name]; ok {
			recs = append(recs, metadata.RemoveUserScramCredential{Key: metadata.ScramKey{User: d.Name, Mechanism: int8(d.Mechanism)}})
			resp.Results = append(resp.Results, UserResult{User: name})
		}
	}
	for _, name := range upOrder {
		if u, ok := upserts[name]; ok {
			cred := auth.DeriveScramCredential(u.Mechanism, u.Salt, u.SaltedPassword, u.Iterations)
			recs = append(recs, metadata.UserScramCredential{Key: metadata.ScramKey{User: u.Name, Mechanism: int8(u.Mechanism)},
				Credential: metadata.ScramCredential{Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}})
			resp.Results = append(resp.Results, UserResult{User: name})
		}
	}
	for _, name := range failedOrder {
		resp.Results = append(resp.Results, UserResult{User: name, Err: failed[name]})
	}
	return recs, resp
}

func validateScramName(name string, m auth.ScramMechanism) error {
	if name == "" {
		return fmt.Errorf("%w: Username must not be empty", kerr.UnacceptableCredential)
	}
	if m == auth.ScramUnknown {
		return fmt.Errorf("%w: Unknown SCRAM mechanism", kerr.UnsupportedSaslMechanism)
	}
	return nil
}

func validateScramDeletion(exists func(string, int8) bool, d ScramDeletion) error {
	if err := validateScramName(d.Name, d.Mechanism); err != nil {
		return err
	}
	if !exists(d.Name, int8(d.Mechanism)) {
		return fmt.Errorf("%w: Attempt to delete a user credential that does not exist", kerr.ResourceNotFound)
	}
	return nil
}

func validateScramUpsertion(u ScramUpsertion) error {
	if err := validateScramName(u.Name, u.Mechanism); err != nil {
		return err
	}
	switch {
	case u.Iterations < auth.ScramMinIterations:
		return fmt.Errorf("%w: Too few iterations", kerr.UnacceptableCredential)
	case u.Iterations > auth.ScramMaxIterations:
		return fmt.Errorf("%w: Too many iterations", kerr.UnacceptableCredential)
	}
	return nil
}

// CreateAcls serves CreateAcls.
func (s *Shell) CreateAcls(ctx context.Context, r *CreateAclsRequest) (*CreateAclsResponse, uint64, error) {
	return call[*CreateAclsResponse](ctx, s, r)
}

// DeleteAcls serves DeleteAcls.
func (s *Shell) DeleteAcls(ctx context.Context, r *DeleteAclsRequest) (*DeleteAclsResponse, uint64, error) {
	return call[*DeleteAclsResponse](ctx, s, r)
}

// AlterUserScramCredentials serves AlterUserScramCredentials.
func (s *Shell) AlterUserScramCredentials(ctx context.Context, r *AlterUserScramCredentialsRequest) (*AlterUserScramCredentialsResponse, uint64, error) {
	return call[*AlterUserScramCredentialsResponse](ctx, s, r)
}
