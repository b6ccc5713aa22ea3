package ontology_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/ontology"
)

// defFixture is the ontology action definitions are checked against:
// Ticket (status, priority, score, tags, assignee, project reference) and
// Project, linked by in_project (Ticket → Project) and sub_project
// (Project → Project).
type defFixture struct {
	s                               *ontology.Store
	ticket, project                 string
	inProject, subProject           string
	updateStatus                    string // an update_object action of Ticket
	createTicket, linkTicket, notif string
}

func newDefFixture(t *testing.T, db *gorm.DB) *defFixture {
	t.Helper()
	ctx := context.Background()
	s := ontology.NewStore(db, nil, builtinKinds)
	f := &defFixture{s: s}
	f.project = ok(s.CreateObjectType(ctx, admin.ID, ontology.ObjectTypeSpec{Name: "Project",
		Properties: []ontology.PropertySpec{{Name: "title", Type: domain.T(domain.TypeString), Required: true}}}))(t).ID
	var sp ontology.ObjectTypeSpec
	decodeInto(t, fmt.Sprintf(`{"name":"Ticket","properties":[
		{"name":"status","type":"string","required":true,"default_value":"open"},
		{"name":"priority","type":"integer"},
		{"name":"score","type":"double"},
		{"name":"tags","type":{"type":"array","element_type":"string"}},
		{"name":"assignee","type":"string"},
		{"name":"due","type":"date"},
		{"name":"project","type":{"type":"reference","object_type_id":%q}}
	]}`, f.project), &sp)
	f.ticket = ok(s.CreateObjectType(ctx, admin.ID, sp))(t).ID
	f.inProject = ok(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "in_project",
		SourceObjectTypeID: f.ticket, TargetObjectTypeID: f.project, Cardinality: domain.ManyToOne}))(t).ID
	f.subProject = ok(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: "sub_project",
		SourceObjectTypeID: f.project, TargetObjectTypeID: f.project, Cardinality: domain.OneToMany}))(t).ID
	return f
}

// base returns a valid definition of kind, named name.
func (f *defFixture) base(t *testing.T, kind, name string) domain.ActionDefinition {
	t.Helper()
	var js string
	switch kind {
	case domain.KindUpdateObject:
		js = `{"name":"N","object_type_id":"TICKET","operation_kind":"update_object",
			"inputs":[{"name":"status","type":"string","required":true},{"name":"note","type":"string"},
				{"name":"reviewers","type":{"type":"array","element_type":"string"}},{"name":"prio","type":"integer","default_value":2}],
			"form_schema":{"sections":[{"id":"main","title":"Main","columns":2,"parameters":["status","note"],
				"overrides":[{"conditions":[{"path":"target.properties.priority","operator":"greater_than","value":3}],"title":"Urgent"}]}],
				"parameter_overrides":[{"parameter":"note","conditions":[{"path":"parameters.status","operator":"is","value":"closed"}],"required":true}]},
			"config":{"operation":{"property_mappings":[{"property":"status","input":"status"},{"property":"priority","input":"prio"},
				{"property":"score","value":1.5}],"static_patch":{"assignee":"triage"}},
				"notification_side_effects":[{"title":"Done","channels":["in_app","email"],"user_id_input_name":"reviewers",
					"target_user_property_name":"assignee","send_to_actor":true}]},
			"policy":{"permission_key":"tickets:edit","required_permission_keys":["tickets:read"],"any_role":["agent"],
				"all_roles":["staff"],"attribute_equals":{"team":"ops","level":3,"on_call":true},"allowed_markings":["public","confidential"],
				"minimum_clearance":"confidential","deny_guest_sessions":true,"confirmation_required":true}}`
	case domain.KindCreateObject:
		js = `{"name":"N","object_type_id":"TICKET","operation_kind":"create_object",
			"inputs":[{"name":"status","type":"string","required":true}],
			"config":{"operation":{"property_mappings":[{"property":"status","input":"status"}]}}}`
	case domain.KindCreateLink:
		js = `{"name":"N","object_type_id":"TICKET","operation_kind":"create_link",
			"inputs":[{"name":"project","type":{"type":"reference","object_type_id":"PROJECT"},"required":true}],
			"config":{"operation":{"link_type_id":"IN_PROJECT","other_object_input":"project","target_side":"source"}}}`
	case domain.KindDeleteObject:
		js = `{"name":"N","object_type_id":"TICKET","operation_kind":"delete_object"}`
	case domain.KindInvokeWebhook:
		js = `{"name":"N","operation_kind":"invoke_webhook","config":{"operation":{"method":"POST","url":"https://hooks.example.com/x","headers":{"X-Token":"abc"}}}}`
	case domain.KindInvokeFunction:
		js = `{"name":"N","object_type_id":"TICKET","operation_kind":"invoke_function","config":{"operation":{"package_name":"scoring","version":"1.2.0","auto_upgrade":true}}}`
	}
	r := strings.NewReplacer(`"N"`, `"`+name+`"`, "TICKET", f.ticket, "PROJECT", f.project, "IN_PROJECT", f.inProject)
	var d domain.ActionDefinition
	decodeInto(t, r.Replace(js), &d)
	return d
}

func ptr[T any](v T) *T { return &v }

// opConfig has the members of every built-in kind's operation config (as
// the single OperationConfig had before kinds had their own types), so a
// case can set a member its kind does not have.
type opConfig struct {
	PropertyMappings []domain.PropertyMapping `json:"property_mappings,omitempty"`
	StaticPatch      map[string]any           `json:"static_patch,omitempty"`
	LinkTypeID       string                   `json:"link_type_id,omitempty"`
	OtherObjectInput string                   `json:"other_object_input,omitempty"`
	TargetSide       string                   `json:"target_side,omitempty"`
	Method           string                   `json:"method,omitempty"`
	URL              string                   `json:"url,omitempty"`
	Headers          map[string]string        `json:"headers,omitempty"`
	Inline           *domain.InlineFunction   `json:"inline,omitempty"`
	PackageID        string                   `json:"package_id,omitempty"`
	PackageName      string                   `json:"package_name,omitempty"`
	Version          string                   `json:"version,omitempty"`
	AutoUpgrade      bool                     `json:"auto_upgrade,omitempty"`
}

// TestDefinitionErrors refuses every kind of definition-time error with
// InvalidActionTypeDefinition naming the member.
func TestDefinitionErrors(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newDefFixture(t, db)
		// Every base definition is valid.
		for _, k := range builtinKinds.Names() {
			ok(f.s.CreateActionType(ctx, admin.ID, f.base(t, k, "valid_"+k)))(t)
		}
		type mut func(d *domain.ActionDefinition)
		// op decodes a definition's operation config into opConfig, which
		// has every kind's members; the case runner encodes it back after
		// the mutation, so a member of another kind reaches the store.
		ops := map[*domain.ActionDefinition]*opConfig{}
		op := func(d *domain.ActionDefinition) *opConfig {
			if o, ok := ops[d]; ok {
				return o
			}
			o := &opConfig{}
			decodeInto(t, string(d.Config.Operation), o)
			ops[d] = o
			return o
		}
		cases := []struct {
			name  string
			kind  string
			mut   mut
			field string
		}{
			// Identity and kind.
			{"name missing", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.Name = "" }, "name"},
			{"name format", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.Name = "has space" }, "name"},
			{"name is a uuid", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.Name = "abcdef01-0000-4000-8000-000000000001" }, "name"},
			{"unknown kind", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.OperationKind = "update_everything" }, "operation_kind"},
			{"object type required", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.ObjectTypeID = "" }, "object_type_id"},
			{"object type unknown", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.ObjectTypeID = "aaaaaaaa-0000-4000-8000-000000000009" }, "object_type_id"},
			{"object type unknown by name", domain.KindDeleteObject, func(d *domain.ActionDefinition) { d.ObjectTypeID = "Nope" }, "object_type_id"},

			// Inputs.
			{"unknown input type", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[1].Type = domain.T("text") }, "inputs[1].type"},
			{"array without element type", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[2].Type.ElementType = nil }, "inputs[2].type.element_type"},
			{"reference to unknown type", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Inputs[1].Type = domain.ReferenceTo("aaaaaaaa-0000-4000-8000-000000000009")
			}, "inputs[1].type.object_type_id"},
			{"duplicate input", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[1].Name = "status" }, "inputs[1].name"},
			{"input name format", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[1].Name = "a.b" }, "inputs[1].name"},
			{"input name missing", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[1].Name = "" }, "inputs[1].name"},
			{"default of wrong type", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[3].DefaultValue = "two" }, "inputs[3].default_value"},
			{"default element of wrong type", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Inputs[2].DefaultValue = []any{"a", 1} }, "inputs[2].default_value[1]"},

			// Form schema sections.
			{"section id missing", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.FormSchema.Sections[0].ID = "" }, "form_schema.sections[0].id"},
			{"duplicate section", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections = append(d.FormSchema.Sections, domain.Section{ID: "main"})
			}, "form_schema.sections[1].id"},
			{"section columns", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.FormSchema.Sections[0].Columns = 3 }, "form_schema.sections[0].columns"},
			{"section unknown parameter", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.FormSchema.Sections[0].Parameters[1] = "nope" }, "form_schema.sections[0].parameters[1]"},
			{"parameter in two sections", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections = append(d.FormSchema.Sections, domain.Section{ID: "more", Parameters: []string{"status"}})
			}, "form_schema.sections[1].parameters[0]"},
			{"section override without conditions", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Conditions = nil
			}, "form_schema.sections[0].overrides[0].conditions"},
			{"section override sets nothing", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Title = nil
			}, "form_schema.sections[0].overrides[0]"},
			{"section override columns", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Columns = ptr(0)
			}, "form_schema.sections[0].overrides[0].columns"},

			// Parameter overrides and conditions.
			{"override unknown parameter", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.FormSchema.ParameterOverrides[0].Parameter = "nope" }, "form_schema.parameter_overrides[0].parameter"},
			{"override parameter missing", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.FormSchema.ParameterOverrides[0].Parameter = "" }, "form_schema.parameter_overrides[0].parameter"},
			{"override hidden and required", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Visible = ptr(false)
			}, "form_schema.parameter_overrides[0]"},
			{"override default of wrong type", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].DefaultValue = 7
			}, "form_schema.parameter_overrides[0].default_value"},
			{"override sets nothing", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Required = nil
			}, "form_schema.parameter_overrides[0]"},
			{"condition unknown path", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Conditions[0].Path = "params.status"
			}, "form_schema.parameter_overrides[0].conditions[0].path"},
			{"condition unknown input", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Conditions[0].Path = "parameters.nope"
			}, "form_schema.parameter_overrides[0].conditions[0].path"},
			{"condition unknown property", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Conditions[0].Path = "target.properties.nope"
			}, "form_schema.sections[0].overrides[0].conditions[0].path"},
			{"condition on target without target", domain.KindCreateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides = []domain.ParameterOverride{{Parameter: "status", Label: ptr("x"),
					Conditions: []domain.Condition{{Path: "target.marking", Operator: domain.OpExists}}}}
			}, "form_schema.parameter_overrides[0].conditions[0].path"},
			{"condition unknown operator", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Conditions[0].Operator = "equals"
			}, "form_schema.parameter_overrides[0].conditions[0].operator"},
			{"condition value missing", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Conditions[0].Value = nil
			}, "form_schema.parameter_overrides[0].conditions[0].value"},
			{"condition value not allowed", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.ParameterOverrides[0].Conditions[0].Operator = domain.OpExists
			}, "form_schema.parameter_overrides[0].conditions[0].value"},
			{"condition value of wrong type", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Conditions[0].Value = "high"
			}, "form_schema.sections[0].overrides[0].conditions[0].value"},
			{"includes on a number", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Conditions[0].Operator = domain.OpIncludes
			}, "form_schema.sections[0].overrides[0].conditions[0].operator"},
			{"ordering on an array", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.FormSchema.Sections[0].Overrides[0].Conditions[0] = domain.Condition{Path: "target.properties.tags", Operator: domain.OpLessThan, Value: "a"}
			}, "form_schema.sections[0].overrides[0].conditions[0].operator"},

			// Operation config per kind.
			{"mapping unknown property", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[0].Property = "state" }, "config.operation.property_mappings[0].property"},
			{"mapping unknown input", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[0].Input = "state" }, "config.operation.property_mappings[0].input"},
			{"mapping type mismatch", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[1].Property = "due" }, "config.operation.property_mappings[1].input"},
			{"mapping value of wrong type", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[2].Value = "high" }, "config.operation.property_mappings[2].value"},
			{"mapping input and value", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[2].Input = "note" }, "config.operation.property_mappings[2]"},
			{"mapping neither", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[2].Value = nil }, "config.operation.property_mappings[2]"},
			{"property mapped twice", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).PropertyMappings[1].Property = "status" }, "config.operation.property_mappings[1].property"},
			{"static patch unknown property", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).StaticPatch["owner"] = "x" }, "config.operation.static_patch.owner"},
			{"static patch clears required", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				op(d).PropertyMappings = op(d).PropertyMappings[1:]
				op(d).StaticPatch["status"] = nil
			}, "config.operation.static_patch.status"},
			{"update without mappings", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				op(d).PropertyMappings, op(d).StaticPatch = nil, nil
			}, "config.operation.property_mappings"},
			{"member of another kind", domain.KindUpdateObject, func(d *domain.ActionDefinition) { op(d).URL = "https://x" }, "config.operation.url"},
			{"create misses required property", domain.KindCreateObject, func(d *domain.ActionDefinition) {
				d.ObjectTypeID = f.project
				op(d).PropertyMappings = nil
			}, "config.operation.property_mappings"},
			{"link type missing", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).LinkTypeID = "" }, "config.operation.link_type_id"},
			{"link type unknown", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).LinkTypeID = "aaaaaaaa-0000-4000-8000-000000000009" }, "config.operation.link_type_id"},
			{"link type not attached", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).LinkTypeID = f.subProject }, "config.operation.link_type_id"},
			{"target on the wrong side", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).TargetSide = domain.SideTarget }, "config.operation.target_side"},
			{"target side missing", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).TargetSide = "" }, "config.operation.target_side"},
			{"target side unknown", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).TargetSide = "left" }, "config.operation.target_side"},
			{"other input unknown", domain.KindCreateLink, func(d *domain.ActionDefinition) { op(d).OtherObjectInput = "other" }, "config.operation.other_object_input"},
			{"other input not a reference", domain.KindCreateLink, func(d *domain.ActionDefinition) { d.Inputs[0].Type = domain.T(domain.TypeString) }, "config.operation.other_object_input"},
			{"other input of the wrong type", domain.KindCreateLink, func(d *domain.ActionDefinition) { d.Inputs[0].Type = domain.ReferenceTo(f.ticket) }, "config.operation.other_object_input"},
			{"other input optional", domain.KindCreateLink, func(d *domain.ActionDefinition) { d.Inputs[0].Required = false }, "config.operation.other_object_input"},
			{"webhook scheme", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) { op(d).URL = "ftp://x/y" }, "config.operation.url"},
			{"webhook relative url", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) { op(d).URL = "/hook" }, "config.operation.url"},
			{"webhook credentials", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) { op(d).URL = "https://u:p@x/y" }, "config.operation.url"},
			{"webhook method", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) { op(d).Method = "TRACE" }, "config.operation.method"},
			{"webhook header name", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) { op(d).Headers = map[string]string{"Bad Header": "x"} }, "config.operation.headers"},
			{"webhook header value", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) { op(d).Headers = map[string]string{"X-A": "a\r\nb"} }, "config.operation.headers.X-A"},
			{"function two references", domain.KindInvokeFunction, func(d *domain.ActionDefinition) { op(d).PackageID = "aaaaaaaa-0000-4000-8000-000000000009" }, "config.operation"},
			{"function no reference", domain.KindInvokeFunction, func(d *domain.ActionDefinition) {
				op(d).PackageName, op(d).Version, op(d).AutoUpgrade = "", "", false
			}, "config.operation"},
			{"function version", domain.KindInvokeFunction, func(d *domain.ActionDefinition) { op(d).Version = "latest" }, "config.operation.version"},
			{"function package id", domain.KindInvokeFunction, func(d *domain.ActionDefinition) {
				op(d).PackageName, op(d).Version, op(d).AutoUpgrade, op(d).PackageID = "", "", false, "pkg-1"
			}, "config.operation.package_id"},
			{"function auto upgrade without name", domain.KindInvokeFunction, func(d *domain.ActionDefinition) {
				op(d).PackageName, op(d).Version, op(d).PackageID = "", "", "aaaaaaaa-0000-4000-8000-000000000009"
			}, "config.operation.auto_upgrade"},
			{"inline function runtime", domain.KindInvokeFunction, func(d *domain.ActionDefinition) {
				op(d).PackageName, op(d).Version, op(d).AutoUpgrade = "", "", false
				op(d).Inline = &domain.InlineFunction{Runtime: "Python 3", Source: "x"}
			}, "config.operation.inline.runtime"},
			{"inline function source", domain.KindInvokeFunction, func(d *domain.ActionDefinition) {
				op(d).PackageName, op(d).Version, op(d).AutoUpgrade = "", "", false
				op(d).Inline = &domain.InlineFunction{Runtime: "python3", Source: "  "}
			}, "config.operation.inline.source"},

			// Notifications.
			{"notification title", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Config.NotificationSideEffects[0].Title = " " }, "config.notification_side_effects[0].title"},
			{"notification channel", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects[0].Channels = []string{"pager"}
			}, "config.notification_side_effects[0].channels[0]"},
			{"revert notification channel", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.RevertNotificationSideEffects = []domain.NotificationSideEffect{{Title: "reverted", Channels: []string{"pager"}}}
			}, "config.revert_notification_side_effects[0].channels[0]"},
			{"notification severity", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Config.NotificationSideEffects[0].Severity = "meh" }, "config.notification_side_effects[0].severity"},
			{"notification unknown input", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects[0].UserIDInputName = "approver"
			}, "config.notification_side_effects[0].user_id_input_name"},
			{"notification input not users", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects[0].UserIDInputName = "prio"
			}, "config.notification_side_effects[0].user_id_input_name"},
			{"notification unknown property", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects[0].TargetUserPropertyName = "owner"
			}, "config.notification_side_effects[0].target_user_property_name"},
			{"notification property not users", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects[0].TargetUserPropertyName = "priority"
			}, "config.notification_side_effects[0].target_user_property_name"},
			{"notification user id", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects[0].UserIDs = []string{"bob"}
			}, "config.notification_side_effects[0].user_ids[0]"},
			{"notification without recipients", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				n := &d.Config.NotificationSideEffects[0]
				n.UserIDInputName, n.TargetUserPropertyName, n.SendToActor = "", "", false
			}, "config.notification_side_effects[0]"},
			{"notification creator without target", domain.KindInvokeWebhook, func(d *domain.ActionDefinition) {
				d.Config.NotificationSideEffects = []domain.NotificationSideEffect{{Title: "x", SendToTargetCreator: true}}
			}, "config.notification_side_effects[0].send_to_target_creator"},

			// Policy.
			{"policy permission key", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.PermissionKey = "tickets edit" }, "policy.permission_key"},
			{"policy empty permission", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.RequiredPermissionKeys = []string{""} }, "policy.required_permission_keys[0]"},
			{"policy empty role", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.AnyRole = []string{"agent", " "} }, "policy.any_role[1]"},
			{"policy duplicate role", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.AllRoles = []string{"staff", "staff"} }, "policy.all_roles[1]"},
			{"policy attribute null", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.AttributeEquals["team"] = nil }, "policy.attribute_equals.team"},
			{"policy attribute object", domain.KindUpdateObject, func(d *domain.ActionDefinition) {
				d.Policy.AttributeEquals["team"] = map[string]any{"a": 1}
			}, "policy.attribute_equals.team"},
			{"policy unknown marking", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.AllowedMarkings = []string{"secret"} }, "policy.allowed_markings[0]"},
			{"policy unknown clearance", domain.KindUpdateObject, func(d *domain.ActionDefinition) { d.Policy.MinimumClearance = "top" }, "policy.minimum_clearance"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := f.base(t, c.kind, fmt.Sprintf("case_%d", i))
				c.mut(&d)
				if o, ok := ops[&d]; ok {
					d.Config.Operation = mustJSON(t, o)
					delete(ops, &d)
				}
				_, err := f.s.CreateActionType(ctx, admin.ID, d)
				mustCode(t, err, apperr.InvalidDefinition, c.field)
				ae, _ := apperr.As(err)
				if len(ae.Details) == 0 || ae.Details[0].Field != c.field {
					t.Fatalf("error names %+v, want field %s (%v)", ae.Details, c.field, err)
				}
				// The same definition is refused on update, and the stored
				// action keeps its version.
				valid := "valid_" + c.kind
				if strings.HasPrefix(c.name, "name ") {
					return
				}
				d.Name = valid
				_, err = f.s.UpdateActionType(ctx, valid, d)
				mustCode(t, err, apperr.InvalidDefinition, c.field)
				if v := ok(f.s.ActionType(ctx, valid))(t).Version; v != 1 {
					t.Fatalf("refused update moved the version to %d", v)
				}
			})
		}
	})
}

// TestInlineEditConstraints saves an inline_edit_config only for an
// update_object action of the same object type that maps the property from
// an input of the same type.
func TestInlineEditConstraints(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newDefFixture(t, db)
		create := func(kind, name string, mut func(d *domain.ActionDefinition)) string {
			d := f.base(t, kind, name)
			if mut != nil {
				mut(&d)
			}
			return ok(f.s.CreateActionType(ctx, admin.ID, d))(t).ID
		}
		update := create(domain.KindUpdateObject, "set_status", nil)
		twoInputs := create(domain.KindUpdateObject, "set_priority", func(d *domain.ActionDefinition) {
			d.Inputs = append(d.Inputs, domain.InputField{Name: "score_in", Type: domain.T(domain.TypeInteger)})
			var o opConfig
			decodeInto(t, string(d.Config.Operation), &o)
			o.PropertyMappings[2] = domain.PropertyMapping{Property: "score", Input: "score_in"}
			d.Config.Operation = mustJSON(t, o)
		})
		createAct := create(domain.KindCreateObject, "new_ticket", nil)
		projectAct := create(domain.KindUpdateObject, "rename_project", func(d *domain.ActionDefinition) {
			d.ObjectTypeID = f.project
			d.FormSchema = domain.FormSchema{}
			d.Config = domain.ActionConfig{Operation: mustJSON(t, opConfig{PropertyMappings: []domain.PropertyMapping{{Property: "title", Input: "status"}}})}
		})
		cases := []struct {
			name     string
			typ      string
			property string
			cfg      domain.InlineEditConfig
			field    string // "" = accepted
		}{
			{"mapped from its only input", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: update}, ""},
			{"by action name", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: "set_status"}, ""},
			{"named input", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: update, InputName: "status"}, ""},
			{"action missing", "Ticket", "status", domain.InlineEditConfig{}, "inline_edit_config.action_type_id"},
			{"action unknown", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: "aaaaaaaa-0000-4000-8000-000000000009"}, "inline_edit_config.action_type_id"},
			{"other object type", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: projectAct}, "inline_edit_config.action_type_id"},
			{"not update_object", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: createAct}, "inline_edit_config.action_type_id"},
			{"property not mapped", "Ticket", "due", domain.InlineEditConfig{ActionTypeID: update}, "inline_edit_config.action_type_id"},
			{"property set by a fixed value", "Ticket", "score", domain.InlineEditConfig{ActionTypeID: update}, "inline_edit_config.action_type_id"},
			{"unknown input name", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: update, InputName: "nope"}, "inline_edit_config.input_name"},
			{"input not mapped to it", "Ticket", "status", domain.InlineEditConfig{ActionTypeID: update, InputName: "note"}, "inline_edit_config.input_name"},
			{"input type differs", "Ticket", "score", domain.InlineEditConfig{ActionTypeID: twoInputs}, "inline_edit_config.action_type_id"},
			{"named input type differs", "Ticket", "score", domain.InlineEditConfig{ActionTypeID: twoInputs, InputName: "score_in"}, "inline_edit_config.input_name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				prop := ok(f.s.Property(ctx, c.typ, c.property))(t)
				cfg := c.cfg
				_, err := f.s.PatchProperty(ctx, c.typ, c.property, ontology.Patch{"inline_edit_config": mustJSON(t, cfg)})
				if c.field == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					got := ok(f.s.Property(ctx, c.typ, c.property))(t)
					if got.InlineEdit.V == nil || got.InlineEdit.V.ActionTypeID != update {
						t.Fatalf("stored config %+v, want action %s", got.InlineEdit.V, update)
					}
					// Reset for the next case.
					ok(f.s.PatchProperty(ctx, c.typ, c.property, ontology.Patch{"inline_edit_config": []byte("null")}))(t)
					return
				}
				mustCode(t, err, apperr.InvalidOntology, c.field)
				if got := ok(f.s.Property(ctx, c.typ, c.property))(t); got.InlineEdit.V != nil || got.UpdatedAt != prop.UpdatedAt {
					t.Fatalf("refused config changed the property: %+v", got.InlineEdit.V)
				}
			})
		}

		// Once saved, the action cannot change so that the config breaks.
		ok(f.s.PatchProperty(ctx, "Ticket", "status", ontology.Patch{"inline_edit_config": mustJSON(t, domain.InlineEditConfig{ActionTypeID: update})}))(t)
		_, err := f.s.PatchActionType(ctx, update, ontology.Patch{"inputs": mustJSON(t, []domain.InputField{
			{Name: "status", Type: domain.T(domain.TypeInteger), Required: true}, {Name: "note", Type: domain.T(domain.TypeString)},
			{Name: "reviewers", Type: domain.ArrayOf(domain.T(domain.TypeString))}, {Name: "prio", Type: domain.T(domain.TypeInteger)}})})
		mustCode(t, err, apperr.InvalidDefinition)
		err = f.s.DeleteActionType(ctx, update)
		mustCode(t, err, apperr.DependentsExist, "property status of object type Ticket")
	})
}

// The operation config is decoded by its kind strictly: an unknown
// member is not_allowed, a wrong-typed one names the member, a config
// that is not an object names config.operation; what is stored (and
// shown) is the kind's canonical form, numbers exact.
func TestOperationConfigDecoding(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		f := newDefFixture(t, db)
		cases := []struct {
			name, kind, op, field, reason string
		}{
			{"unknown member", domain.KindUpdateObject, `{"property_mappings":[{"property":"status","input":"status"}],"bogus":1}`, "config.operation.bogus", "not_allowed"},
			{"member of another kind", domain.KindCreateLink, `{"link_type_id":"IN_PROJECT","other_object_input":"project","target_side":"source","static_patch":{"status":"x"}}`, "config.operation.static_patch", "not_allowed"},
			{"delete takes none", domain.KindDeleteObject, `{"url":"https://x"}`, "config.operation.url", "not_allowed"},
			{"wrong type", domain.KindCreateLink, `{"link_type_id":5,"other_object_input":"project","target_side":"source"}`, "config.operation.link_type_id", "type"},
			{"not an object", domain.KindDeleteObject, `[]`, "config.operation", "type"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := f.base(t, c.kind, fmt.Sprintf("dec_%d", i))
				d.Config.Operation = json.RawMessage(strings.ReplaceAll(c.op, "IN_PROJECT", f.inProject))
				_, err := f.s.CreateActionType(ctx, admin.ID, d)
				ae, ok := apperr.As(err)
				if !ok || ae.Code != apperr.InvalidDefinition || len(ae.Details) == 0 || ae.Details[0].Field != c.field || ae.Details[0].Reason != c.reason {
					t.Fatalf("got %v (%+v), want InvalidDefinition %s %s", err, ae, c.field, c.reason)
				}
			})
		}
		d := f.base(t, domain.KindUpdateObject, "canonical")
		d.Config.Operation = json.RawMessage(`{ "static_patch" : {"assignee":"triage"}, "property_mappings":[{"property":"status","input":"status"},
			{"property":"priority","value":9007199254740993}] }`)
		v := ok(f.s.CreateActionType(ctx, admin.ID, d))(t)
		want := `{"property_mappings":[{"property":"status","input":"status"},{"property":"priority","value":9007199254740993}],"static_patch":{"assignee":"triage"}}`
		if got := string(ok(f.s.GetActionType(ctx, v.ID))(t).Config.Operation); got != want {
			t.Fatalf("stored config %s, want %s", got, want)
		}
		// delete_object's empty config is shown as an empty object.
		del := ok(f.s.CreateActionType(ctx, admin.ID, f.base(t, domain.KindDeleteObject, "del")))(t)
		if got := string(ok(f.s.GetActionType(ctx, del.ID))(t).Config.Operation); got != `{}` {
			t.Fatalf("delete_object config shown as %s, want {}", got)
		}
	})
}
