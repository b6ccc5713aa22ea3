package console

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/engine"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// maxListed bounds the action types a page lists, and is the page size
// in which it reads action and object types.
const maxListed = 500

type actionGroup struct {
	ObjectType string
	Actions    []ontology.ActionTypeView
}

type actionsView struct {
	Query  string
	Groups []actionGroup
}

// actionsPage lists the action types the caller may run, grouped by
// object type, optionally filtered by a search.
func (c *Console) actionsPage(g *gin.Context) {
	ctx, p := g.Request.Context(), principal(g)
	q := strings.TrimSpace(g.Query("q"))
	if err := searchBound(q); err != nil {
		c.fail(g, err)
		return
	}
	ats, err := c.runnable(ctx, p, q)
	if err != nil {
		c.fail(g, err)
		return
	}
	names, err := c.objectTypeNames(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	groups := map[string][]ontology.ActionTypeView{}
	for _, at := range ats {
		ot := names[at.ObjectTypeID]
		if ot == "" {
			ot = "(no object type)"
		}
		groups[ot] = append(groups[ot], at)
	}
	v := actionsView{Query: q}
	for ot, as := range groups {
		v.Groups = append(v.Groups, actionGroup{ObjectType: ot, Actions: as})
	}
	sort.Slice(v.Groups, func(i, j int) bool { return v.Groups[i].ObjectType < v.Groups[j].ObjectType })
	c.page(g, http.StatusOK, "actions", "Actions", v)
}

// runnable lists, by name, up to maxListed action types matching search
// that p may run. The store is read a page at a time until that many are
// found or it has no more, so actions a user may not run do not crowd out
// the ones they may.
func (c *Console) runnable(ctx context.Context, p *auth.Principal, search string) ([]ontology.ActionTypeView, error) {
	var out []ontology.ActionTypeView
	for off := 0; len(out) < maxListed; off += maxListed {
		ats, err := c.d.Store.ListActionTypes(ctx, "", search, off, maxListed)
		if err != nil {
			return nil, err
		}
		for _, at := range ats {
			full := &engine.ActionType{ID: at.ID, Version: at.Version, ActionDefinition: at.ActionDefinition}
			if c.d.Executions.MayRun(full, p.User, p.Guest) == nil && len(out) < maxListed {
				out = append(out, at)
			}
		}
		if len(ats) < maxListed {
			break
		}
	}
	return out, nil
}

// objectTypeNames maps every object type's id to its display name, read
// a page at a time.
func (c *Console) objectTypeNames(g *gin.Context) (map[string]string, error) {
	out := map[string]string{}
	for off := 0; ; off += maxListed {
		ots, err := c.d.Store.ListObjectTypes(g.Request.Context(), "", off, maxListed)
		if err != nil {
			return nil, err
		}
		for _, ot := range ots {
			out[ot.ID] = displayName(ot.DisplayName, ot.Name)
		}
		if len(ots) < maxListed {
			return out, nil
		}
	}
}

func displayName(display, name string) string {
	if display != "" {
		return display
	}
	return name
}

type actionPageView struct {
	Action      *ontology.ActionTypeView
	Title       string
	ObjectType  string // the target's type name, "" when the action takes none
	NeedsTarget bool
	Target      *models.Object
	TargetLabel string
	Form        *formView
	CanPreview  bool
}

// actionPage shows an action: its target picker and, once a target is
// picked (or when it takes none), its form.
func (c *Console) actionPage(g *gin.Context) {
	ctx := g.Request.Context()
	view, err := c.d.Store.GetActionType(ctx, g.Param("id"))
	if err != nil {
		c.fail(g, err)
		return
	}
	v := actionPageView{Action: view, Title: displayName(view.DisplayName, view.Name), CanPreview: c.d.Preview != nil}
	if view.ObjectTypeID != "" {
		if ot, err := c.d.Store.ObjectType(ctx, view.ObjectTypeID); err == nil {
			v.ObjectType = ot.Name
		}
	}
	in := formInput{ActionID: view.ID, TargetID: g.Query("target")}
	if err := c.prefillFrom(g, &in); err != nil {
		c.fail(g, err)
		return
	}
	f, err := c.evaluate(g, in)
	if err != nil {
		c.fail(g, err)
		return
	}
	v.NeedsTarget = f.NeedsTarget
	if in.TargetID != "" && f.Refusal == nil && !f.TargetMissing {
		v.Target, _ = c.d.Store.GetObject(ctx, principal(g).User, view.ObjectTypeID, in.TargetID)
		v.TargetLabel = c.objectLabel(g, v.Target)
	}
	v.Form = f
	c.page(g, http.StatusOK, "action", v.Title, v)
}

// objectLabel is an object's primary key value, or its id.
func (c *Console) objectLabel(g *gin.Context, o *models.Object) string {
	if o == nil {
		return ""
	}
	if ot, err := c.d.Store.ObjectType(g.Request.Context(), o.ObjectTypeID); err == nil && ot.PrimaryKey != "" {
		if s := valueText(o.Properties.V[ot.PrimaryKey]); s != "" {
			return s
		}
	}
	return o.ID
}

type objectOption struct {
	ID, Label, Marking string
}

type targetOptionsView struct {
	ActionID string
	Options  []objectOption
	Query    string
}

// targetOptions is the target picker's list: readable objects of the
// action's type matching the search.
func (c *Console) targetOptions(g *gin.Context) {
	view, err := c.d.Store.GetActionType(g.Request.Context(), g.Param("id"))
	if err != nil {
		c.fail(g, err)
		return
	}
	opts, err := c.searchObjects(g, view.ObjectTypeID, g.Query("q"))
	if err != nil {
		c.fail(g, err)
		return
	}
	c.fragment(g, "target-options", targetOptionsView{ActionID: view.ID, Options: opts, Query: g.Query("q")})
}

type referenceView struct {
	Name, ID string
	Options  []objectOption
	Selected string
}

// referenceOptions is a reference input's picker: a select of readable
// objects of the reference's type matching the search.
func (c *Console) referenceOptions(g *gin.Context) {
	opts, err := c.searchObjects(g, g.Query("type"), g.Query("q"))
	if err != nil {
		c.fail(g, err)
		return
	}
	name := g.Query("name")
	c.fragment(g, "reference-select", referenceView{Name: name, ID: fieldID(strings.TrimPrefix(name, paramPrefix)), Options: opts})
}

// fail renders an error: its message for typed errors, a generic one
// (logged) for the rest.
func (c *Console) fail(g *gin.Context, err error) {
	if ae, ok := apperr.As(err); ok && ae.Code != apperr.Internal {
		c.errorPage(g, ae.Code.Status(), ae.Message)
		return
	}
	c.d.Logger.ErrorContext(g.Request.Context(), "console", "path", g.Request.URL.Path, "err", err)
	c.errorPage(g, http.StatusInternalServerError, "Internal error; see the server log.")
}

// prefillFrom starts the form from the target's current values (a target
// the user may not read, or none, starts it empty; evaluate says why).
func (c *Console) prefillFrom(g *gin.Context, in *formInput) error {
	if in.TargetID == "" || !domain.IsUUID(in.TargetID) {
		return nil
	}
	ctx := g.Request.Context()
	at, err := c.d.Store.ActionType(ctx, in.ActionID)
	if err != nil {
		return err
	}
	o, err := c.d.Store.GetObject(ctx, principal(g).User, at.ObjectTypeID, in.TargetID)
	if err != nil {
		return nil
	}
	in.Raw = prefill(at, o)
	return nil
}
