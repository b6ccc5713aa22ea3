package console

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

type objectView struct {
	Type   *ontology.ObjectTypeView
	Object *models.Object
	Label  string
	Rows   []propertyRow
	CSRF   string
	objectExtras
}

// propertyRow is one property on an object's page; Editable when it has
// an inline_edit_config.
type propertyRow struct {
	TypeName, ObjectID string
	Name, Label, Kind  string
	Value              string
	Editable           bool
	Message, Error     string
	ExecutionID        string
	CSRF               string
	// Link is the WebDAV file a media_reference value names (media.go).
	Link string
	// Links are the elements of an array of media references, each
	// linked to its file.
	Links   []fileLink
	Options []string
	// Ref is a reference value by its object's title.
	Ref *cell
}

// objectPage shows an object the caller may read, its properties
// (inline-editable where configured) and the actions on its type.
func (c *Console) objectPage(g *gin.Context) {
	ctx, p := g.Request.Context(), principal(g)
	o, err := c.d.Store.GetObject(ctx, p.User, g.Param("type"), g.Param("id"))
	if err != nil {
		c.fail(g, err)
		return
	}
	ot, err := c.d.Store.ObjectType(ctx, o.ObjectTypeID)
	if err != nil {
		c.fail(g, err)
		return
	}
	v := objectView{Type: ot, Object: o, Label: c.objectLabel(g, o), CSRF: g.GetString(csrfKey)}
	refs, err := c.refTitles(ctx, p.User, ot.Properties, []models.Object{*o})
	if err != nil {
		c.fail(g, err)
		return
	}
	for _, pr := range ot.Properties {
		row := c.propertyRow(g, ot, o, pr)
		if len(refIDs(pr.Type.V, o.Properties.V[pr.Name])) > 0 {
			rc := refCell(pr.Type.V, o.Properties.V[pr.Name], refs)
			row.Ref = &rc
		}
		v.Rows = append(v.Rows, row)
	}
	if v.objectExtras, err = c.objectExtras(g, ot, o); err != nil {
		c.fail(g, err)
		return
	}
	c.page(g, http.StatusOK, "object", ot.Name+" "+v.Label, v)
}

func (c *Console) propertyRow(g *gin.Context, ot *ontology.ObjectTypeView, o *models.Object, pr models.Property) propertyRow {
	row := propertyRow{TypeName: ot.Name, ObjectID: o.ID, Name: pr.Name, Label: displayName(pr.DisplayName, pr.Name),
		Kind: kindOf(pr.Type.V), Value: formText(pr.Type.V, o.Properties.V[pr.Name]), Editable: pr.InlineEdit.V != nil,
		CSRF: g.GetString(csrfKey), Link: mediaLink(pr.Type.V, o.Properties.V[pr.Name]),
		Links: mediaLinks(pr.Type.V, o.Properties.V[pr.Name])}
	if row.Kind == "select" {
		row.Options = c.d.Levels
	}
	return row
}

// inlineEdit saves one property through the inline-edit path of the
// executions service (the property's configured action, its other inputs
// prefilled from the object), as POST .../inline-edit does.
func (c *Console) inlineEdit(g *gin.Context) {
	ctx, p := g.Request.Context(), principal(g)
	prop, err := c.d.Store.Property(ctx, g.Param("type"), g.Param("prop"))
	if err != nil {
		c.fail(g, err)
		return
	}
	_ = g.Request.ParseForm()
	val, _, perr := parseField(prop.Type.V, "value", g.Request.PostForm)
	row := propertyRow{TypeName: g.Param("type"), ObjectID: g.Param("id"), Name: prop.Name,
		Label: displayName(prop.DisplayName, prop.Name), Kind: kindOf(prop.Type.V), Editable: true,
		Value: g.PostForm("value"), CSRF: g.GetString(csrfKey)}
	if perr != nil {
		row.Error = perr.Error()
		c.fragment(g, "property-row", row)
		return
	}
	ex, err := c.submitInline(g, executions.InlineEdit{Actor: p.User, Guest: p.Guest, ObjectTypeRef: g.Param("type"),
		ObjectID: g.Param("id"), Property: prop.Name, Value: val, Justification: g.PostForm("justification")})
	switch ae, ok := apperr.As(err); {
	case ok:
		row.Error = ae.Message
	case err != nil:
		c.fail(g, err)
		return
	case ex.Status == models.StatusSucceeded:
		row.Message, row.ExecutionID = "Saved.", ex.ID
	default:
		row.Error, row.ExecutionID = ex.Status+": "+ex.ErrorMessage, ex.ID
	}
	if o, err := c.d.Store.GetObject(ctx, p.User, g.Param("type"), g.Param("id")); err == nil && row.Error == "" {
		row.Value = formText(prop.Type.V, o.Properties.V[prop.Name])
	}
	c.fragment(g, "property-row", row)
}

func (c *Console) submitInline(g *gin.Context, e executions.InlineEdit) (*models.Execution, error) {
	ctx := g.Request.Context()
	r, err := c.d.Executions.InlineEditRequest(ctx, e)
	if err != nil {
		return nil, err
	}
	hd, err := c.d.Executions.Submit(ctx, *r, true)
	if err != nil {
		return nil, err
	}
	return c.d.Executions.Wait(ctx, hd)
}
