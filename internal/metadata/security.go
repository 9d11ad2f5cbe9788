package metadata

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
)

// Security records: ACLs and SCRAM credentials, Kafka's
// AccessControlEntryRecord, RemoveAccessControlEntryRecord,
// UserScramCredentialRecord and RemoveUserScramCredentialRecord. Every node
// applies them, so every broker's authorizer and SCRAM authenticator read
// the same image. Enumerations are Kafka's wire codes (package auth names
// them); the image stores what it is given.
const (
	TypeAccessControlEntry        RecordType = 13
	TypeRemoveAccessControlEntry  RecordType = 14
	TypeUserScramCredential       RecordType = 15
	TypeRemoveUserScramCredential RecordType = 16
)

// ACL is one access control entry with its resource pattern (Kafka's
// StandardAcl).
type ACL struct {
	ResourceType int8
	ResourceName string
	PatternType  int8
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// AccessControlEntry adds an ACL under a fresh id. Skipped when the id is
// taken or the same ACL exists under another id (Kafka keeps one of each).
type AccessControlEntry struct {
	ID  [16]byte
	ACL ACL
}

// RemoveAccessControlEntry removes the ACL with ID; skipped when there is none.
type RemoveAccessControlEntry struct {
	ID [16]byte
}

// ScramKey names a stored SCRAM credential: a user and a mechanism
// (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
type ScramKey struct {
	User      string
	Mechanism int8
}

// ScramCredential is a salted SCRAM credential: never the password.
type ScramCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// UserScramCredential sets a user's credential for a mechanism.
type UserScramCredential struct {
	Key        ScramKey
	Credential ScramCredential
}

// RemoveUserScramCredential deletes one; skipped when there is none.
type RemoveUserScramCredential struct {
	Key ScramKey
}

func (AccessControlEntry) Type() RecordType        { return TypeAccessControlEntry }
func (RemoveAccessControlEntry) Type() RecordType  { return TypeRemoveAccessControlEntry }
func (UserScramCredential) Type() RecordType       { return TypeUserScramCredential }
func (RemoveUserScramCredential) Type() RecordType { return TypeRemoveUserScramCredential }

// ACLs returns every ACL by id. The map is the image's: do not change it.
func (im *Image) ACLs() map[[16]byte]ACL { return im.acls }

// NumACLs is how many ACLs exist.
func (im *Image) NumACLs() int { return len(im.acls) }

// ScramCredential returns a user's credential for a mechanism.
func (im *Image) ScramCredential(user string, mechanism int8) (ScramCredential, bool) {
	c, ok := im.scram[ScramKey{User: user, Mechanism: mechanism}]
	return c, ok
}

// ScramKeys returns every stored credential's key, by user then mechanism.
func (im *Image) ScramKeys() []ScramKey {
	keys := slices.Collect(maps.Keys(im.scram))
	slices.SortFunc(keys, func(a, b ScramKey) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Mechanism, b.Mechanism))
	})
	return keys
}

func (a *applier) ownACLs() {
	if !a.aclsCopied {
		a.next.acls, a.aclsCopied = maps.Clone(a.next.acls), true
		if a.next.acls == nil {
			a.next.acls = map[[16]byte]ACL{}
		}
	}
}

func (a *applier) addACL(r AccessControlEntry) {
	if _, taken := a.next.acls[r.ID]; taken || r.ID == ([16]byte{}) {
		a.next.Skipped++
		return
	}
	for _, acl := range a.next.acls {
		if acl == r.ACL {
			a.next.Skipped++
			return
		}
	}
	a.ownACLs()
	a.next.acls[r.ID] = r.ACL
	a.d.ACLs = true
}

func (a *applier) removeACL(r RemoveAccessControlEntry) {
	if _, ok := a.next.acls[r.ID]; !ok {
		a.next.Skipped++
		return
	}
	a.ownACLs()
	delete(a.next.acls, r.ID)
	a.d.ACLs = true
}

func (a *applier) ownScram() {
	if !a.scramCopied {
		a.next.scram, a.scramCopied = maps.Clone(a.next.scram), true
		if a.next.scram == nil {
			a.next.scram = map[ScramKey]ScramCredential{}
		}
	}
}

func (a *applier) setScram(r UserScramCredential) {
	a.ownScram()
	c := r.Credential
	a.next.scram[r.Key] = ScramCredential{Salt: bytes.Clone(c.Salt), StoredKey: bytes.Clone(c.StoredKey),
		ServerKey: bytes.Clone(c.ServerKey), Iterations: c.Iterations}
	a.d.Scram = true
}

func (a *applier) removeScram(r RemoveUserScramCredential) {
	if _, ok := a.next.scram[r.Key]; !ok {
		a.next.Skipped++
		return
	}
	a.ownScram()
	delete(a.next.scram, r.Key)
	a.d.Scram = true
}

// securityRecords are the image's ACLs (by id) and SCRAM credentials (by
// key), for a snapshot.
func (im *Image) securityRecords() []Record {
	var out []Record
	ids := slices.Collect(maps.Keys(im.acls))
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		out = append(out, AccessControlEntry{ID: id, ACL: im.acls[id]})
	}
	for _, k := range im.ScramKeys() {
		out = append(out, UserScramCredential{Key: k, Credential: im.scram[k]})
	}
	return out
}
