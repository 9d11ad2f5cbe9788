package main

// gregor acl list|create|delete: ACLs as kafka-acls.sh manages them, with
// its flag names.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func aclCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "List, create and delete ACLs (as kafka-acls.sh)",
		Long: `ACLs allow or deny a principal an operation on a resource: a topic, a group,
the cluster or a transactional id, named literally, by prefix
(--resource-pattern-type prefixed) or all of them (the name *). They need a
broker with authorizer.class.name set; the principal running these commands
needs DESCRIBE (list) or ALTER (create, delete) on the cluster.

Examples:
  gregor acl create --allow-principal User:alice --operation read,describe --topic orders --group billing
  gregor acl create --allow-principal User:bob --operation write --topic team. --resource-pattern-type prefixed
  gregor acl list --topic orders
  gregor acl delete --principal User:alice --topic orders`,
	}
	f.register(cmd)
	cmd.AddCommand(aclListCmd(&f), aclCreateCmd(&f), aclDeleteCmd(&f))
	return cmd
}

// aclResourceFlags name the resources an ACL command is about.
type aclResourceFlags struct {
	topics, groups, txnIDs []string
	cluster                bool
	pattern                string
}

func (r *aclResourceFlags) register(cmd *cobra.Command, patternDefault string) {
	fs := cmd.Flags()
	fs.StringSliceVar(&r.topics, "topic", nil, "topic names (* for every topic)")
	fs.StringSliceVar(&r.groups, "group", nil, "consumer group ids (* for every group)")
	fs.StringSliceVar(&r.txnIDs, "transactional-id", nil, "transactional ids (* for every one)")
	fs.BoolVar(&r.cluster, "cluster", false, "the cluster resource")
	fs.StringVar(&r.pattern, "resource-pattern-type", patternDefault, "literal, prefixed, or for list and delete also any and match")
}

type aclResource struct {
	typ  int8
	name *string
}

// resources lists the named resources; none means every resource (for
// list and delete).
func (r *aclResourceFlags) resources() []aclResource {
	var out []aclResource
	add := func(typ int8, names []string) {
		for _, n := range names {
			out = append(out, aclResource{typ, &n})
		}
	}
	add(2, r.topics)
	add(3, r.groups)
	add(5, r.txnIDs)
	if r.cluster {
		name := "kafka-cluster"
		out = append(out, aclResource{4, &name})
	}
	return out
}

func (r *aclResourceFlags) patternType() (kmsg.ACLResourcePatternType, error) {
	p, err := kmsg.ParseACLResourcePatternType(r.pattern)
	if err != nil {
		return 0, fmt.Errorf("--resource-pattern-type %q: want literal, prefixed, any or match", r.pattern)
	}
	return p, nil
}

func parseOperations(s []string) ([]kmsg.ACLOperation, error) {
	var out []kmsg.ACLOperation
	for _, o := range s {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op <= kmsg.ACLOperationAny {
			return nil, fmt.Errorf("--operation %q: want read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write or all", o)
		}
		out = append(out, op)
	}
	return out, nil
}

// aclRow is one ACL as the commands print it.
type aclRow struct {
	Principal    string `json:"principal"`
	Permission   string `json:"permission"`
	Operation    string `json:"operation"`
	Host         string `json:"host"`
	ResourceType string `json:"resource_type"`
	Name         string `json:"name"`
	PatternType  string `json:"pattern_type"`
}

var aclRows = tableView[aclRow]{
	header: []any{"principal", "permission", "operation", "host", "resource-type", "name", "pattern"},
	row: func(a aclRow) []any {
		return []any{a.Principal, a.Permission, a.Operation, a.Host, a.ResourceType, a.Name, a.PatternType}
	},
}

func aclListCmd(f *connFlags) *cobra.Command {
	var res aclResourceFlags
	var principal string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the ACLs that match the filter (all without one)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return aclList(cmd, f, &res, principal)
		},
	}
	res.register(cmd, "any")
	cmd.Flags().StringVar(&principal, "principal", "", "only the ACLs of this principal (User:NAME)")
	return cmd
}

func aclFilters(res *aclResourceFlags, principal string) ([]kmsg.DescribeACLsRequest, error) {
	pt, err := res.patternType()
	if err != nil {
		return nil, err
	}
	resources := res.resources()
	if len(resources) == 0 {
		resources = []aclResource{{typ: 1}}
	}
	var out []kmsg.DescribeACLsRequest
	for _, r := range resources {
		req := kmsg.NewDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(r.typ), r.name, pt
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if principal != "" {
			req.Principal = &principal
		}
		out = append(out, req)
	}
	return out, nil
}

func aclList(cmd *cobra.Command, f *connFlags, res *aclResourceFlags, principal string) error {
	filters, err := aclFilters(res, principal)
	if err != nil {
		return err
	}
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	var rows []aclRow
	for i := range filters {
		resp, err := filters[i].RequestWith(s.ctx, s.cl)
		if err != nil {
			return err
		}
		if err := withMessage(kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage)); err != nil {
			return err
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				rows = append(rows, aclRow{Principal: a.Principal, Permission: a.PermissionType.String(), Operation: a.Operation.String(),
					Host: a.Host, ResourceType: r.ResourceType.String(), Name: r.ResourceName, PatternType: r.ResourcePatternType.String()})
			}
		}
	}
	if rows == nil {
		rows = []aclRow{}
	}
	return aclRows.print(cmd.OutOrStdout(), f.output, rows)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func aclCreateCmd(f *connFlags) *cobra.Command {
	var res aclResourceFlags
	var allow, deny, ops []string
	var allowHost, denyHost string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Allow or deny principals operations on resources",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(allow)+len(deny) == 0 || len(ops) == 0 || len(res.resources()) == 0 {
				return errors.New("create needs --allow-principal or --deny-principal, --operation and a resource (--topic, --group, --transactional-id or --cluster)")
			}
			return aclCreate(cmd, f, &res, ops, []aclGrant{{allow, allowHost, kmsg.ACLPermissionTypeAllow}, {deny, denyHost, kmsg.ACLPermissionTypeDeny}})
		},
	}
	res.register(cmd, "literal")
	fs := cmd.Flags()
	fs.StringSliceVar(&allow, "allow-principal", nil, "principals to allow (User:NAME, User:* for everyone)")
	fs.StringSliceVar(&deny, "deny-principal", nil, "principals to deny")
	fs.StringSliceVar(&ops, "operation", nil, "operations: read, write, create, delete, alter, describe, describe_configs, alter_configs, cluster_action, idempotent_write, all")
	fs.StringVar(&allowHost, "allow-host", "*", "host the allow ACLs are for")
	fs.StringVar(&denyHost, "deny-host", "*", "host the deny ACLs are for")
	return cmd
}

type aclGrant struct {
	principals []string
	host       string
	perm       kmsg.ACLPermissionType
}

func aclCreate(cmd *cobra.Command, f *connFlags, res *aclResourceFlags, opNames []string, grants []aclGrant) error {
	pt, err := res.patternType()
	if err != nil {
		return err
	}
	ops, err := parseOperations(opNames)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateACLsRequest()
	var rows []aclRow
	for _, g := range grants {
		for _, p := range g.principals {
			for _, r := range res.resources() {
				for _, op := range ops {
					c := kmsg.NewCreateACLsRequestCreation()
					c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(r.typ), *r.name, pt
					c.Principal, c.Host, c.Operation, c.PermissionType = p, g.host, op, g.perm
					req.Creations = append(req.Creations, c)
					rows = append(rows, aclRow{Principal: p, Permission: g.perm.String(), Operation: op.String(), Host: g.host,
						ResourceType: c.ResourceType.String(), Name: *r.name, PatternType: pt.String()})
				}
			}
		}
	}
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	resp, err := req.RequestWith(s.ctx, s.cl)
	if err != nil {
		return err
	}
	var failed failures
	for i, r := range resp.Results {
		if err := withMessage(kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage)); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s %s %s on %s %s: %v\n", rows[i].Permission, rows[i].Principal, rows[i].Operation,
				strings.ToLower(rows[i].ResourceType), rows[i].Name, err)
			failed.add(err)
		}
	}
	if err := aclRows.print(cmd.OutOrStdout(), f.output, rows); err != nil {
		return err
	}
	return failed.err("ACLs")
}

func aclDeleteCmd(f *connFlags) *cobra.Command {
	var res aclResourceFlags
	var principal string
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete the ACLs that match the filter",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(res.resources()) == 0 && principal == "" {
				return errors.New("delete needs a filter: --principal or a resource (delete every ACL with --topic '*' --group '*' --cluster ... or by principal)")
			}
			return aclDelete(cmd, f, &res, principal)
		},
	}
	res.register(cmd, "literal")
	cmd.Flags().StringVar(&principal, "principal", "", "only the ACLs of this principal (User:NAME)")
	return cmd
}

func aclDelete(cmd *cobra.Command, f *connFlags, res *aclResourceFlags, principal string) error {
	filters, err := aclFilters(res, principal)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, d := range filters {
		df := kmsg.NewDeleteACLsRequestFilter()
		df.ResourceType, df.ResourceName, df.ResourcePatternType = d.ResourceType, d.ResourceName, d.ResourcePatternType
		df.Principal, df.Host, df.Operation, df.PermissionType = d.Principal, d.Host, d.Operation, d.PermissionType
		req.Filters = append(req.Filters, df)
	}
	s, end, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer end()
	resp, err := req.RequestWith(s.ctx, s.cl)
	if err != nil {
		return err
	}
	rows := []aclRow{}
	var failed failures
	for _, r := range resp.Results {
		if err := withMessage(kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage)); err != nil {
			failed.add(err)
			fmt.Fprintln(cmd.ErrOrStderr(), err)
			continue
		}
		for _, m := range r.MatchingACLs {
			rows = append(rows, aclRow{Principal: m.Principal, Permission: m.PermissionType.String(), Operation: m.Operation.String(),
				Host: m.Host, ResourceType: m.ResourceType.String(), Name: m.ResourceName, PatternType: m.ResourcePatternType.String()})
		}
	}
	if err := aclRows.print(cmd.OutOrStdout(), f.output, rows); err != nil {
		return err
	}
	return failed.err("filters")
}
