package ontology

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
)

// LinkTypeSpec is the body that creates or replaces a link type. Object
// types may be named by id or name.
type LinkTypeSpec struct {
	Name               string `json:"name"`
	DisplayName        string `json:"display_name,omitempty"`
	Description        string `json:"description,omitempty"`
	SourceObjectTypeID string `json:"source_object_type_id"`
	TargetObjectTypeID string `json:"target_object_type_id"`
	Cardinality        string `json:"cardinality"`
}

// LinkSpec is the body that creates a link.
type LinkSpec struct {
	SourceObjectID string         `json:"source_object_id"`
	TargetObjectID string         `json:"target_object_id"`
	Properties     map[string]any `json:"properties,omitempty"`
}

func specOfLinkType(lt models.LinkType) LinkTypeSpec {
	return LinkTypeSpec{Name: lt.Name, DisplayName: lt.DisplayName, Description: lt.Description,
		SourceObjectTypeID: lt.SourceObjectTypeID, TargetObjectTypeID: lt.TargetObjectTypeID, Cardinality: lt.Cardinality}
}

// findLinkType loads a link type by id or name.
func findLinkType(ctx context.Context, db *gorm.DB, ref string) (*models.LinkType, error) {
	return findByRef[models.LinkType](ctx, db, ref, apperr.LinkTypeNotFound, "link type")
}

// LinkType returns a link type by id or name.
func (s *Store) LinkType(ctx context.Context, ref string) (*models.LinkType, error) {
	return findLinkType(ctx, s.db, ref)
}

// ListLinkTypes lists link types, optionally those touching an object
// type (by id or name) and matching search.
func (s *Store) ListLinkTypes(ctx context.Context, objectType, search string, offset, limit int) ([]models.LinkType, error) {
	q := searchClause(s.db.WithContext(ctx).Model(&models.LinkType{}), search, "name", "display_name", "description")
	if objectType != "" {
		ot, err := findObjectType(ctx, s.db, objectType)
		if err != nil {
			return nil, err
		}
		q = q.Where("source_object_type_id = ? OR target_object_type_id = ?", ot.ID, ot.ID)
	}
	out := []models.LinkType{}
	if err := q.Order("name").Offset(offset).Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list link types: %w", err)
	}
	return out, nil
}

// checkLinkTypeSpec validates sp and resolves its object types to ids.
func (s *Store) checkLinkTypeSpec(ctx context.Context, tx *gorm.DB, sp *LinkTypeSpec) error {
	if sp.Name == "" {
		return ontErr("name", "required", "a link type needs a name")
	}
	if !domain.NameRE.MatchString(sp.Name) {
		return ontErr("name", "format", "name %q must match %s", sp.Name, domain.NameRE)
	}
	if err := checkNotUUID(apperr.InvalidOntology, sp.Name); err != nil {
		return err
	}
	if len(sp.DisplayName) > 256 {
		return ontErr("display_name", "too_long", "display_name is at most 256 characters")
	}
	for _, side := range []struct {
		field string
		ref   *string
	}{{"source_object_type_id", &sp.SourceObjectTypeID}, {"target_object_type_id", &sp.TargetObjectTypeID}} {
		if *side.ref == "" {
			return ontErr(side.field, "required", "a link type needs a %s", side.field)
		}
		ot, err := findObjectType(ctx, tx, *side.ref)
		if apperr.Is(err, apperr.ObjectTypeNotFound) {
			return ontErr(side.field, "not_found", "object type %q does not exist", *side.ref)
		}
		if err != nil {
			return err
		}
		*side.ref = ot.ID
	}
	found := false
	for _, c := range domain.Cardinalities {
		found = found || c == sp.Cardinality
	}
	if !found {
		return ontErr("cardinality", "unknown_cardinality", "cardinality must be one of %s, got %q", strings.Join(domain.Cardinalities, ", "), sp.Cardinality)
	}
	return nil
}

// CreateLinkType creates a link type.
func (s *Store) CreateLinkType(ctx context.Context, owner string, sp LinkTypeSpec) (*models.LinkType, error) {
	var out *models.LinkType
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := s.checkLinkTypeSpec(ctx, tx, &sp); err != nil {
			return err
		}
		if err := s.nameFree(ctx, tx, &models.LinkType{}, "link type", sp.Name, ""); err != nil {
			return err
		}
		lt := &models.LinkType{ID: newID(), Name: sp.Name, DisplayName: sp.DisplayName, Description: sp.Description,
			SourceObjectTypeID: sp.SourceObjectTypeID, TargetObjectTypeID: sp.TargetObjectTypeID,
			Cardinality: sp.Cardinality, Owner: owner}
		if err := tx.Create(lt).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.Conflict, "a link type named %q already exists", sp.Name)
			}
			return fmt.Errorf("create link type: %w", err)
		}
		out = lt
		return nil
	})
	return out, err
}

// UpdateLinkType replaces a link type. Its object types and cardinality
// can change only while it has no links.
func (s *Store) UpdateLinkType(ctx context.Context, ref string, sp LinkTypeSpec) (*models.LinkType, error) {
	var out *models.LinkType
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		lt, err := findLinkType(ctx, tx, ref)
		if err != nil {
			return err
		}
		if err := s.checkLinkTypeSpec(ctx, tx, &sp); err != nil {
			return err
		}
		if err := s.nameFree(ctx, tx, &models.LinkType{}, "link type", sp.Name, lt.ID); err != nil {
			return err
		}
		if sp.SourceObjectTypeID != lt.SourceObjectTypeID || sp.TargetObjectTypeID != lt.TargetObjectTypeID || sp.Cardinality != lt.Cardinality {
			var n int64
			if err := tx.Model(&models.Link{}).Where("link_type_id = ?", lt.ID).Count(&n).Error; err != nil {
				return fmt.Errorf("count links: %w", err)
			}
			if n > 0 {
				return apperr.New(apperr.Conflict, "link type %s has %d link(s); its object types and cardinality cannot change", lt.Name, n)
			}
		}
		lt.Name, lt.DisplayName, lt.Description = sp.Name, sp.DisplayName, sp.Description
		lt.SourceObjectTypeID, lt.TargetObjectTypeID, lt.Cardinality = sp.SourceObjectTypeID, sp.TargetObjectTypeID, sp.Cardinality
		if err := tx.Save(lt).Error; err != nil {
			if isUnique(err) {
				return apperr.New(apperr.Conflict, "a link type named %q already exists", sp.Name)
			}
			return fmt.Errorf("update link type: %w", err)
		}
		// Action types linking through it must still fit.
		ats, err := allActionTypes(ctx, tx)
		if err != nil {
			return err
		}
		lookup := dbLookup{ctx: ctx, db: tx}
		for _, at := range ats {
			if !s.usesLinkType(definitionOf(&at), lt.ID) {
				continue
			}
			err := domain.ValidateDefinition(ctx, definitionOf(&at), s.kinds, lookup, domain.CheckEnv{Markings: s.levels})
			if ae, ok := apperr.As(err); ok && ae.Code == apperr.InvalidDefinition {
				return apperr.New(apperr.InvalidOntology, "changing link type %s would make action type %s invalid: %s", lt.Name, at.Name, ae.Message).
					WithDetails(apperr.Detail{Field: "action_types", Reason: at.ID, Message: "action type " + at.Name})
			}
			if err != nil {
				return err
			}
		}
		out = lt
		return nil
	})
	return out, err
}

// PatchLinkType changes the members of a link type named in p.
func (s *Store) PatchLinkType(ctx context.Context, ref string, p Patch) (*models.LinkType, error) {
	lt, err := findLinkType(ctx, s.db, ref)
	if err != nil {
		return nil, err
	}
	var sp LinkTypeSpec
	if err := p.apply(specOfLinkType(*lt), &sp); err != nil {
		return nil, err
	}
	return s.UpdateLinkType(ctx, lt.ID, sp)
}

// DeleteLinkType deletes a link type and its links; it is refused while
// create_link action types use it.
func (s *Store) DeleteLinkType(ctx context.Context, ref string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		lt, err := findLinkType(ctx, tx, ref)
		if err != nil {
			return err
		}
		ats, err := allActionTypes(ctx, tx)
		if err != nil {
			return err
		}
		var deps []apperr.Detail
		for _, at := range ats {
			if s.usesLinkType(definitionOf(&at), lt.ID) {
				deps = append(deps, apperr.Detail{Field: "action_types", Reason: at.ID, Message: "action type " + at.Name})
			}
		}
		if len(deps) > 0 {
			return dependents("link type "+lt.Name, deps)
		}
		if err := tx.Where("link_type_id = ?", lt.ID).Delete(&models.Link{}).Error; err != nil {
			return fmt.Errorf("delete links: %w", err)
		}
		if err := tx.Delete(lt).Error; err != nil {
			return fmt.Errorf("delete link type: %w", err)
		}
		return nil
	})
}

// slots are the cardinality slots of a new link (see models.Link).
func slots(cardinality, linkID, sourceID, targetID string) (source, target string) {
	source, target = linkID, linkID
	switch cardinality {
	case domain.OneToOne:
		source, target = sourceID, targetID
	case domain.OneToMany:
		target = targetID // a target has one source
	case domain.ManyToOne:
		source = sourceID // a source has one target
	}
	return source, target
}

// createLink links sourceID to targetID, checking object types and
// cardinality (409 LinkCardinalityViolation, naming neither the existing
// link nor its other end).
func (s *Store) createLink(ctx context.Context, tx *gorm.DB, linkTypeRef, sourceID, targetID string, props map[string]any, createdBy string) (*models.Link, error) {
	lt, err := findLinkType(ctx, tx, linkTypeRef)
	if err != nil {
		return nil, err
	}
	for _, end := range []struct{ field, id, typeID string }{
		{"source_object_id", sourceID, lt.SourceObjectTypeID}, {"target_object_id", targetID, lt.TargetObjectTypeID},
	} {
		o, err := s.loadObject(ctx, tx, end.id)
		if err != nil {
			return nil, err
		}
		if o == nil {
			return nil, apperr.New(apperr.ObjectNotFound, "%s: object %q does not exist", end.field, end.id).
				WithDetails(apperr.Detail{Field: end.field, Reason: "not_found", Message: "no such object"})
		}
		if o.ObjectTypeID != end.typeID {
			return nil, apperr.New(apperr.InvalidArgument, "%s: object %s is of object type %s, but link type %s needs %s", end.field, o.ID, o.ObjectTypeID, lt.Name, end.typeID).
				WithDetails(apperr.Detail{Field: end.field, Reason: "object_type", Message: "wrong object type"})
		}
	}
	sourceID, targetID = strings.ToLower(sourceID), strings.ToLower(targetID)
	var existing models.Link
	err = tx.Where("link_type_id = ? AND source_id = ? AND target_id = ?", lt.ID, sourceID, targetID).Take(&existing).Error
	if err == nil {
		return nil, apperr.New(apperr.Conflict, "objects %s and %s are already linked by %s (link %s)", sourceID, targetID, lt.Name, existing.ID)
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("check link: %w", err)
	}
	l := &models.Link{ID: newID(), LinkTypeID: lt.ID, SourceID: sourceID, TargetID: targetID,
		Properties: models.NumJSON[map[string]any]{V: props}, CreatedBy: createdBy}
	if l.Properties.V == nil {
		l.Properties.V = map[string]any{}
	}
	l.SourceSlot, l.TargetSlot = slots(lt.Cardinality, l.ID, sourceID, targetID)
	if l.SourceSlot == sourceID {
		if err := cardinalityFree(tx, lt, "source_slot", sourceID, "source"); err != nil {
			return nil, err
		}
	}
	if l.TargetSlot == targetID {
		if err := cardinalityFree(tx, lt, "target_slot", targetID, "target"); err != nil {
			return nil, err
		}
	}
	if err := tx.Create(l).Error; err != nil {
		if isUnique(err) {
			return nil, apperr.New(apperr.CardinalityViolation, "link type %s is %s: the link would break its cardinality", lt.Name, lt.Cardinality)
		}
		return nil, fmt.Errorf("create link: %w", err)
	}
	return l, nil
}

func cardinalityFree(tx *gorm.DB, lt *models.LinkType, col, objectID, side string) error {
	var other models.Link
	err := tx.Where("link_type_id = ? AND "+col+" = ?", lt.ID, objectID).Take(&other).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check cardinality: %w", err)
	}
	// Generic on purpose: the existing link's other end may be an object
	// the caller cannot read, so neither it nor the link is named.
	return apperr.New(apperr.CardinalityViolation, "link type %s is %s: the %s object already has a %s link", lt.Name, lt.Cardinality, side, lt.Name).
		WithDetails(apperr.Detail{Field: side + "_object_id", Reason: "cardinality", Message: "already has a link of this type"})
}

// CreateLinkAs links two objects u may read.
func (s *Store) CreateLinkAs(ctx context.Context, u *models.User, linkTypeRef string, sp LinkSpec) (*models.Link, error) {
	if sp.Properties != nil && !isJSONObject(sp.Properties) {
		return nil, apperr.New(apperr.InvalidArgument, "properties must be a JSON object")
	}
	var out *models.Link
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, end := range []struct{ field, id string }{{"source_object_id", sp.SourceObjectID}, {"target_object_id", sp.TargetObjectID}} {
			if end.id == "" {
				return apperr.New(apperr.InvalidArgument, "%s is required", end.field).
					WithDetails(apperr.Detail{Field: end.field, Reason: "required", Message: "required"})
			}
			o, err := s.loadObject(ctx, tx, end.id)
			if err != nil {
				return err
			}
			if o != nil && !s.CanRead(u, o.Marking, o.Organization) {
				return apperr.New(apperr.ObjectNotFound, "%s: object %q does not exist", end.field, end.id)
			}
		}
		var err error
		out, err = s.createLink(ctx, tx, linkTypeRef, sp.SourceObjectID, sp.TargetObjectID, sp.Properties, u.ID)
		return err
	})
	return out, err
}

func isJSONObject(m map[string]any) bool {
	return domain.T(domain.TypeJSON).Check("properties", m, domain.CheckEnv{}) == nil
}

// readableLinks keeps the links whose both ends u may read.
func (s *Store) readableLinks(ctx context.Context, u *models.User, links []models.Link) ([]models.Link, error) {
	if u.IsAdmin() || len(links) == 0 {
		return links, nil
	}
	ids := map[string]bool{}
	for _, l := range links {
		ids[l.SourceID], ids[l.TargetID] = true, true
	}
	var objs []models.Object
	if err := s.db.WithContext(ctx).Select("id", "marking", "organization").Where("id IN ?", sortedKeys(ids)).Find(&objs).Error; err != nil {
		return nil, fmt.Errorf("load link ends: %w", err)
	}
	ok := map[string]bool{}
	for _, o := range objs {
		ok[o.ID] = s.CanRead(u, o.Marking, o.Organization)
	}
	out := []models.Link{}
	for _, l := range links {
		if ok[l.SourceID] && ok[l.TargetID] {
			out = append(out, l)
		}
	}
	return out, nil
}

// GetLink reads a link whose ends u may read.
func (s *Store) GetLink(ctx context.Context, u *models.User, id string) (*models.Link, error) {
	var l models.Link
	err := s.db.WithContext(ctx).Where("id = ?", strings.ToLower(id)).Take(&l).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, apperr.New(apperr.LinkNotFound, "link %q does not exist", id)
	}
	if err != nil {
		return nil, fmt.Errorf("load link %s: %w", id, err)
	}
	ls, err := s.readableLinks(ctx, u, []models.Link{l})
	if err != nil {
		return nil, err
	}
	if len(ls) == 0 {
		return nil, apperr.New(apperr.LinkNotFound, "link %q does not exist", id)
	}
	return &ls[0], nil
}

// DeleteLinkAs deletes a link whose ends u may read.
func (s *Store) DeleteLinkAs(ctx context.Context, u *models.User, id string) error {
	l, err := s.GetLink(ctx, u, id)
	if err != nil {
		return err
	}
	if err := s.db.WithContext(ctx).Delete(l).Error; err != nil {
		return fmt.Errorf("delete link %s: %w", id, err)
	}
	return nil
}

// DeleteLink deletes the link id inside tx (revert's inverse of a
// create_link edit); a link that no longer exists is LinkNotFound.
func (s *Store) DeleteLink(ctx context.Context, tx *gorm.DB, id string) error {
	res := tx.WithContext(ctx).Where("id = ?", id).Delete(&models.Link{})
	if res.Error != nil {
		return fmt.Errorf("delete link %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return apperr.New(apperr.LinkNotFound, "link %q does not exist", id)
	}
	return nil
}

// LinkQuery selects links.
type LinkQuery struct {
	// LinkType (id or name) restricts the links to one type.
	LinkType string
	// Direction is "outgoing" (object is the source), "incoming" (the
	// target) or "" (both); only with an object.
	Direction string
	// PageToken is a page's NextPageToken (a keyset position), or an
	// offset token of the listing before keyset pages.
	PageToken string
	Offset    int
	Limit     int
}

// LinkPage is a page of links and the token of the next ("" at the end).
type LinkPage struct {
	Items         []models.Link
	NextPageToken string
}

// ListLinks lists the links of a link type (linkTypeRef) whose ends u may
// read, oldest first: the read rule is in the query.
func (s *Store) ListLinks(ctx context.Context, u *models.User, linkTypeRef string, offset, limit int) ([]models.Link, error) {
	lt, err := findLinkType(ctx, s.db, linkTypeRef)
	if err != nil {
		return nil, err
	}
	q, args := s.linksSQL(u, []linkRange{{where: "l.link_type_id = ?", args: []any{lt.ID}, ends: []string{"l.source_id", "l.target_id"}}},
		"", nil, offset, limit)
	return s.queryLinks(ctx, q, args)
}

// ObjectLinks lists the links of an object u may read whose other end u
// may read, oldest first.
func (s *Store) ObjectLinks(ctx context.Context, u *models.User, typeRef, objectID string, q LinkQuery) ([]models.Link, error) {
	p, err := s.listObjectLinks(ctx, u, typeRef, objectID, q, false)
	return p.Items, err
}

// ObjectLinksPage is ObjectLinks with the token of the next page.
func (s *Store) ObjectLinksPage(ctx context.Context, u *models.User, typeRef, objectID string, q LinkQuery) (LinkPage, error) {
	return s.listObjectLinks(ctx, u, typeRef, objectID, q, true)
}

func (s *Store) listObjectLinks(ctx context.Context, u *models.User, typeRef, objectID string, q LinkQuery, paged bool) (LinkPage, error) {
	sql, args, err := s.objectLinksSQL(ctx, u, typeRef, objectID, q, paged)
	if err != nil {
		return LinkPage{}, err
	}
	items, err := s.queryLinks(ctx, sql, args)
	if err != nil {
		return LinkPage{}, err
	}
	p := LinkPage{Items: items}
	if paged {
		p.Items, p.NextPageToken = nextPage(items, q.Limit, linkCursor)
	}
	return p, nil
}

// objectLinksSQL is listObjectLinks' statement (paged: one row more than
// the page, telling whether another follows).
func (s *Store) objectLinksSQL(ctx context.Context, u *models.User, typeRef, objectID string, q LinkQuery, paged bool) (string, []any, error) {
	o, err := s.readable(ctx, s.db, u, typeRef, objectID)
	if err != nil {
		return "", nil, err
	}
	// Links by their source, then (not again the links to itself) by
	// their target; o is readable, so only the other end is checked.
	out := linkRange{index: "idx_link_source", where: "l.source_id = ?", args: []any{o.ID}, ends: []string{"l.target_id"}}
	in := linkRange{index: "idx_link_target", where: "l.target_id = ?", args: []any{o.ID}, ends: []string{"l.source_id"}}
	var ranges []linkRange
	switch q.Direction {
	case "":
		in.where, in.args = in.where+" AND l.source_id <> ?", append(in.args, o.ID)
		ranges = []linkRange{out, in}
	case "outgoing":
		ranges = []linkRange{out}
	case "incoming":
		ranges = []linkRange{in}
	default:
		return "", nil, apperr.New(apperr.InvalidArgument, "direction must be outgoing or incoming, got %q", q.Direction).
			WithDetails(apperr.Detail{Field: "direction", Reason: "value", Message: "outgoing or incoming"})
	}
	typeID := ""
	if q.LinkType != "" {
		lt, err := findLinkType(ctx, s.db, q.LinkType)
		if err != nil {
			return "", nil, err
		}
		typeID = lt.ID
	}
	after, offset, err := parseToken(order{}, q.PageToken)
	if err != nil {
		return "", nil, err
	}
	limit := q.Limit
	if paged {
		limit++
	}
	sql, args := s.linksSQL(u, ranges, typeID, after, q.Offset+offset, limit)
	return sql, args, nil
}

func (s *Store) queryLinks(ctx context.Context, q string, args []any) ([]models.Link, error) {
	out := []models.Link{}
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	return out, nil
}

// linkRange is one range of an index of links: the links matching where
// (one value of the index's first column), with ends the columns naming
// the objects whose read rule applies.
type linkRange struct {
	index string
	where string
	args  []any
	ends  []string
}

// linkColumns are the columns a listing reads: not the cardinality slots,
// which no reader of a listing uses (a fifth of the text a row converts).
// Named (AS): a compound's ORDER BY refers to them.
const linkColumns = "l.id AS id, l.link_type_id AS link_type_id, l.source_id AS source_id, l.target_id AS target_id, " +
	"l.properties AS properties, l.created_by AS created_by, l.created_at AS created_at"

// linkCols are the columns links are listed by: creation, then id.
var linkCols = sortCols{at: "l.created_at", id: "l.id", atTime: true}

// linksSQL lists the links of ranges (of link type typeID unless "")
// whose ends u may read, in creation order, after the keyset position
// after (if any), skipping offset and returning at most limit. Each range
// is read in order from its index and stops at offset+limit rows; two
// are merged by UNION ALL, so a page costs its own rows, however many
// links the object has.
func (s *Store) linksSQL(u *models.User, ranges []linkRange, typeID string, after *cursor, offset, limit int) (string, []any) {
	sc := s.levels.ReadScope(u)
	var parts []string
	var args []any
	for _, r := range ranges {
		var sb strings.Builder
		sb.WriteString("SELECT " + linkColumns + " FROM links l")
		if r.index != "" && !models.IsPostgres(s.db) {
			sb.WriteString(" INDEXED BY " + r.index)
		}
		var conds []string
		var condArgs []any
		for i, end := range r.ends {
			if sc.All {
				break
			}
			// CROSS JOIN: SQLite keeps the links' index as the outer loop.
			e := fmt.Sprintf("e%d", i)
			sb.WriteString(" CROSS JOIN objects " + e)
			cond, as := sc.SQL(e)
			conds = append(conds, e+".id = "+end+" AND "+cond)
			condArgs = append(condArgs, as...)
		}
		sb.WriteString(" WHERE " + r.where)
		args = append(args, r.args...)
		if typeID != "" {
			sb.WriteString(" AND l.link_type_id = ?")
			args = append(args, typeID)
		}
		if after != nil {
			q, as := keysetSQL(linkCols, after, false)
			sb.WriteString(" AND " + q)
			args = append(args, as...)
		}
		for _, c := range conds {
			sb.WriteString(" AND " + c)
		}
		args = append(args, condArgs...)
		if len(ranges) == 1 {
			sb.WriteString(" ORDER BY " + orderSQL(linkCols, false) + " LIMIT ? OFFSET ?")
			return sb.String(), append(args, limit, offset)
		}
		if !models.IsPostgres(s.db) {
			parts = append(parts, sb.String())
			continue
		}
		sb.WriteString(" ORDER BY " + orderSQL(linkCols, false) + " LIMIT ?")
		args = append(args, offset+limit)
		parts = append(parts, "SELECT * FROM ("+sb.String()+") r"+strconv.Itoa(len(parts)))
	}
	return strings.Join(parts, " UNION ALL ") + " ORDER BY created_at, id LIMIT ? OFFSET ?", append(args, limit, offset)
}

// linkCursor is the keyset position after l.
func linkCursor(l *models.Link) cursor {
	return cursor{Version: 1, At: models.CreatedKey(l.CreatedAt), ID: l.ID}
}
